// This file knows the paths the exporter serves itself, so that a path
// chosen by the user (--web.telemetry-path) is refused with one line
// instead of colliding with them: http.ServeMux panics on a duplicate
// pattern, and quietly takes requests away from a route whose subtree
// holds a more specific one.

package server

import (
	"fmt"
	"path"
	"strings"
)

// ReservedPaths are the exporter's own routes. A path ending in / is a subtree:
// everything under it is reserved too.
var ReservedPaths = []string{"/", "/api/", "/-/healthy", "/-/ready", "/-/reload", "/status"}

// CheckTelemetryPath reports why p cannot be the path of the metrics, or
// nil. p must be an absolute, clean path of plain characters, and neither
// be nor lie under a reserved route (the root only by being it), nor hold
// one under it. The management prefix /-/ is reserved as a whole.
func CheckTelemetryPath(p string) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("must start with /, got %q", p)
	}
	if i := strings.IndexFunc(p, func(r rune) bool {
		// ServeMux reads {…} as wildcards and a space as a method; ?, #
		// and % never reach a route as such.
		return r <= ' ' || r == 0x7f || strings.ContainsRune("{}?#%\\", r)
	}); i >= 0 {
		return fmt.Errorf("%q: character %q is not allowed in a path", p, p[i])
	}
	trimmed := strings.TrimSuffix(p, "/")
	if p != "/" && path.Clean(trimmed) != trimmed {
		return fmt.Errorf("%q is not a clean path (no //, . or .. segments)", p)
	}
	if strings.HasPrefix(p, "/-/") || p == "/-" {
		return fmt.Errorf("%q: paths under /-/ are reserved for the exporter's management endpoints", p)
	}
	for _, r := range ReservedPaths {
		if collides(p, r) {
			return fmt.Errorf("%q collides with the exporter's own route %s", p, r)
		}
	}
	return nil
}

// collides reports whether serving p would take requests from r or share
// its pattern. Subtrees are compared by their path without the final /:
// /api collides with /api/ (the mux redirects one to the other), /status/
// with /status.
func collides(p, r string) bool {
	if r == "/" {
		return p == "/"
	}
	a, b := strings.TrimSuffix(p, "/"), strings.TrimSuffix(r, "/")
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}
