package dashboards

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// TestComparisonsLeaveOutTheDayNotOver evaluates the visitors dashboard's
// week-over-week and 4-weeks panels with promtool on 29 whole days and a
// thirtieth still under way (a live 1d window climbing hour by hour, the
// last sample at noon): at the step of every whole day each panel divides
// it by the same weekday 7 or 28 days earlier, and at today's step it shows
// nothing, where it used to divide half a day by a whole one (0.068 after
// a 7-day backfill, read as a 93% drop).
func TestComparisonsLeaveOutTheDayNotOver(t *testing.T) {
	promtool := testutil.Promtool(t)
	queries, err := Queries(Dir())
	if err != nil {
		t.Fatal(err)
	}
	vars := DefaultVars()
	vars["job"], vars["instance"], vars["project"] = "", "", "p" // day_offset -25h: UTC days
	const days = 30                                              // day 29 is today, to noon
	total := func(d int) int { return 100 * (d + 1) }
	// The live 1d window: hour h of day d has counted (h+1)/24 of the day.
	var values []string
	for d := range days {
		for h := range 24 {
			if d == days-1 && h > 12 {
				break
			}
			values = append(values, strconv.Itoa(total(d)*(h+1)/24))
		}
	}
	var tests strings.Builder
	checked := 0
	for _, q := range queries {
		back := map[string]int{"Daily visitors, week over week": 7, "Daily visitors, 4 weeks over 4 weeks": 28}[q.Panel]
		if q.File != "visitors.json" || back == 0 {
			continue
		}
		checked++
		expr := strings.ReplaceAll(Expand(q.Expr, vars), "'", "''")
		for _, d := range []int{back, days - 2, days - 1} {
			want := "[]"
			if d < days-1 {
				want = fmt.Sprintf("[{labels: '{project=\"p\"}', value: %g}]", float64(total(d))/float64(total(d-back)))
			}
			fmt.Fprintf(&tests, "      - expr: '%s'\n        eval_time: %dh\n        exp_samples: %s\n", expr, 24*d, want)
		}
	}
	// promtool loads the input up to the latest eval_time only: a late one
	// makes the panels see what follows each step, as Prometheus does.
	fmt.Fprintf(&tests, "      - expr: vector(1)\n        eval_time: %dh\n        exp_samples: [{labels: '{}', value: 1}]\n", 24*(days+2))
	if checked != 2 {
		t.Fatalf("found %d of the 2 comparison panels", checked)
	}
	file := filepath.Join(t.TempDir(), "daily.yml")
	body := "tests:\n  - interval: 1h\n    input_series:\n" +
		"      - series: 'mintlify_site_unique_visitors_deduplicated{project=\"p\",window=\"1d\"}'\n" +
		"        values: '" + strings.Join(values, " ") + "'\n" +
		"    promql_expr_test:\n" + tests.String()
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := testutil.CombinedOutput(exec.Command(promtool, "test", "rules", file)); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}
