package fakeapi

import "strings"

// padPaths pads the paths of a page about to be served to
// Options.PathBytes: a site whose URLs are long (query strings, generated
// pages), for the tests and benchmarks of a walk's memory. Padding as the
// page is served keeps the fake's own copy of the site small, so that a
// benchmark in the same process measures the client. Padded paths stay
// distinct, in the same order.
func (s *Server) padPaths(rows []pageRow) {
	for i := range rows {
		if pad := s.opts.PathBytes - len(rows[i].Path); pad > 0 {
			rows[i].Path += "/" + strings.Repeat("x", pad-1)
		}
	}
}
