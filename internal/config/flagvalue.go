// This file holds kingpin flag values whose parse errors name their
// flag. kingpin's own typed values report "invalid syntax" without saying
// which flag was wrong, and a user with a dozen flags deserves to know.

package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"
	"github.com/prometheus/common/model"
)

// Flagger is what flags are added to: a kingpin application or one of its
// commands.
type Flagger interface {
	Flag(name, help string) *kingpin.FlagClause
}

// DurationVar adds a duration flag that sets *d, with *d's current value as
// its default: the default stays with the Config that owns it. The default
// is shown by FormatDuration (24h, 7d), as the README writes it.
func DurationVar(app Flagger, name, help string, d *time.Duration) {
	app.Flag(name, help+" A duration such as 30s, 5m or 7d.").Default(FormatDuration(*d)).SetValue(&durationValue{name: name, d: d})
}

// FormatDuration writes d as people write such durations: in hours up to
// a week (24h, 72h), in days from a week (7d, 30d), never in weeks or
// years. model.Duration's own String picks the largest unit and so shows
// 24h as 1d and 7d as 1w. Whatever it writes, model.ParseDuration reads
// back as d.
func FormatDuration(d time.Duration) string {
	const day = 24 * time.Hour
	if d <= 0 {
		return model.Duration(d).String()
	}
	var b strings.Builder
	if d >= 7*day {
		fmt.Fprintf(&b, "%dd", d/day)
		d %= day
	}
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if n := d / u.unit; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.unit
		}
	}
	if b.Len() == 0 {
		return model.Duration(d).String() // under a millisecond
	}
	return b.String()
}

type durationValue struct {
	name string
	d    *time.Duration
}

func (v *durationValue) Set(s string) error {
	d, err := model.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("--%s: invalid duration %q (want e.g. 30s, 5m, 7d; never negative)", v.name, s)
	}
	*v.d = time.Duration(d)
	return nil
}

func (v *durationValue) String() string { return FormatDuration(*v.d) }

// IntVar adds an integer flag that sets *n, with *n's current value as its
// default.
func IntVar(app Flagger, name, help string, n *int) {
	app.Flag(name, help).Default(strconv.Itoa(*n)).SetValue(&intValue{name: name, n: n})
}

type intValue struct {
	name string
	n    *int
}

func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("--%s: %q is not a whole number", v.name, s)
	}
	*v.n = n
	return nil
}

func (v *intValue) String() string { return strconv.Itoa(*v.n) }

// Enum adds a flag that takes one of options.
func Enum(app Flagger, name, help, def string, options ...string) *string {
	s := new(string)
	app.Flag(name, help+" One of: ["+strings.Join(options, ", ")+"]").Default(def).SetValue(&enumValue{name: name, s: s, options: options})
	return s
}

type enumValue struct {
	name    string
	s       *string
	options []string
}

func (v *enumValue) Set(s string) error {
	for _, o := range v.options {
		if s == o {
			*v.s = s
			return nil
		}
	}
	return fmt.Errorf("--%s: %q is not one of %s", v.name, s, strings.Join(v.options, ", "))
}

func (v *enumValue) String() string { return *v.s }

// BytesVar adds a size flag that sets *n, with *n's current value as its
// default (shown in base-2 units, e.g. 64KiB).
func BytesVar(app Flagger, name, help string, n *int64) {
	app.Flag(name, help).Default(bytesDefault(*n)).SetValue(&bytesValue{name: name, n: n})
}

// bytesDefault shows n in base-2 units when that reads back exactly (the
// units package rounds large values), else in bytes.
func bytesDefault(n int64) string {
	s := units.Base2Bytes(n).String()
	if b, err := units.ParseBase2Bytes(s); err == nil && int64(b) == n {
		return s
	}
	return strconv.FormatInt(n, 10)
}

type bytesValue struct {
	name string
	n    *int64
}

func (v *bytesValue) Set(s string) error {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		*v.n = n
		return nil
	}
	b, err := units.ParseBase2Bytes(s)
	if err != nil {
		return fmt.Errorf("--%s: invalid size %q (want e.g. 65536 or 64KiB)", v.name, s)
	}
	*v.n = int64(b)
	return nil
}

func (v *bytesValue) String() string { return strconv.FormatInt(*v.n, 10) }
