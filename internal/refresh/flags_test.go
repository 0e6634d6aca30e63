package refresh

import (
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// TestOldPlanFlagNames: the plan's --visitors.* names still set their
// --analytics.* flags, with a notice naming the new ones, and errors name
// the flag given.
func TestOldPlanFlagNames(t *testing.T) {
	parse := func(args ...string) (Config, string, error) {
		app := kingpin.New("t", "")
		f := RegisterFlags(app)
		if _, err := app.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f.Config()
	}
	c, notice, err := parse("--visitors.min-interval=7m", "--visitors.max-staleness=2h", "--visitors.final-day-delay=20m", "--visitors.page-size=100")
	if err != nil || c.MinInterval != 7*time.Minute || c.MaxStaleness != 2*time.Hour || c.FinalDayDelay != 20*time.Minute || c.PageSize != 100 {
		t.Errorf("old names gave %+v, %v", c, err)
	}
	for _, name := range []string{"min-interval", "max-staleness", "final-day-delay", "page-size"} {
		if !strings.Contains(notice, "--visitors."+name+" is deprecated: use --analytics."+name) {
			t.Errorf("notice %q lacks --visitors.%s", notice, name)
		}
	}
	if c, notice, err := parse("--visitors.cache-ttl=9m"); err != nil || c.MinInterval != 9*time.Minute || !strings.Contains(notice, "--analytics.min-interval") {
		t.Errorf("--visitors.cache-ttl: %s, %q, %v", c.MinInterval, notice, err)
	}
	if _, notice, err := parse("--analytics.min-interval=7m"); err != nil || notice != "" {
		t.Errorf("new name: notice %q, %v", notice, err)
	}
	if _, _, err := parse("--visitors.page-size=0"); err == nil || !strings.HasPrefix(err.Error(), "--visitors.page-size: ") {
		t.Errorf("bad page size under the old name: %v", err)
	}
	if _, _, err := parse("--analytics.page-size=0"); err == nil || !strings.HasPrefix(err.Error(), "--analytics.page-size: ") {
		t.Errorf("bad page size: %v", err)
	}
}
