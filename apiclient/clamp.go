package apiclient

import (
	"time"

	"github.com/go-kit/log/level"
)

// clamper is an answer that refuses, once decoded, the values no real
// answer can mean (a count beyond 2^53, a date outside 2000-2199): it
// reads them as not given and names them (Client.do counts them).
type clamper interface{ clamp() (fields []string) }

// plausible reports whether t is a date a real answer can mean: none, or
// within 2000-2199.
func plausible(t time.Time) bool { return t.IsZero() || (t.Year() >= 2000 && t.Year() < 2200) }

// reportClamped counts each value of an answer of endpoint its clamp
// refused in mintlify_api_rows_skipped_total (reason out_of_range), and
// warns of each endpoint's field once: a poll repeats it every interval.
func (c *Client) reportClamped(endpoint string, fields []string) {
	for _, f := range fields {
		c.metrics.skipped(endpoint, Skips{SkipOutOfRange: 1})
		if _, warned := c.clampWarned.LoadOrStore(endpoint+" "+f, true); !warned {
			level.Warn(c.logger).Log("msg", "the API sent a value no real answer can mean: read as not given, counted in mintlify_api_rows_skipped_total "+
				"(reason out_of_range); warned once per endpoint and field", "endpoint", endpoint, "field", f)
		}
	}
}
