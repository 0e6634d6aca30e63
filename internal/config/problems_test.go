package config

import (
	"strings"
	"testing"
	"time"
)

// TestEveryProblemOfAFileAtOnce: a typo does not hide the file's other
// problems; unknown keys are told in the file's words with the key meant;
// every bad entry of a list is a problem of its own.
func TestEveryProblemOfAFileAtOnce(t *testing.T) {
	_, err := Parse("bad.yml", []byte(`organizations:
  - name: a
    api_key_env: K
    analytics_budgt: 10
projects:
  - id: p
    windwos: [7d]
    windows: [0d, 400d, 7d]
    timezone: Mars/Olympus
    sources:
      searches: {top_queries: 5000}
colour: blue
`), 5*time.Minute)
	if err == nil {
		t.Fatal("no error")
	}
	got := err.Error()
	for _, want := range []string{
		`bad.yml:4: unknown key "analytics_budgt" in organizations[0]; did you mean "analytics_budget"?`,
		`bad.yml:7: unknown key "windwos" in projects[0]; did you mean "windows"?`,
		`bad.yml:8: projects[0].windows[0]: invalid window "0d"`,
		`bad.yml:8: projects[0].windows[1]: invalid window "400d"`,
		`bad.yml:9: projects[0].timezone: unknown time zone "Mars/Olympus"`,
		`bad.yml:11: projects[0].sources.searches.top_queries: must be between 0 and 1000, got 5000`,
		`bad.yml:12: unknown key "colour" at the top level`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != 7 {
		t.Errorf("%d problems, want 7:\n%s", n, got)
	}
	if strings.Contains(got, "not found in type") || strings.Contains(got, "config.") {
		t.Errorf("Go's words in the problems:\n%s", got)
	}
}

// TestSourcesShortForm: sources: [visitors, views], the shape most people
// write first, is the map of those sources with their defaults.
func TestSourcesShortForm(t *testing.T) {
	const head = "organizations: [{name: a, api_key_env: K}]\nprojects:\n"
	short, err := Parse("c.yml", []byte(head+"  - id: p\n    sources: [searches, visitors]\n"), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	long, err := Parse("c.yml", []byte(head+"  - id: p\n    sources: {visitors: {}, searches: {}}\n"), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := specsString(short.Projects[0].Sources), specsString(long.Projects[0].Sources); got != want || got != "visitors[]q0c0p0 searches[]q0c0p0" {
		t.Errorf("short form %s, map %s, want visitors[]q0c0p0 searches[]q0c0p0", got, want)
	}
	if _, err := Parse("c.yml", []byte(head+"  - id: p\n    sources: [pageviews]\n"), 5*time.Minute); err == nil ||
		!strings.Contains(err.Error(), `c.yml:4: projects[0].sources.pageviews: unknown source "pageviews"`) {
		t.Errorf("unknown source in the short form: %v", err)
	}
}

// TestWrongTypesInTheFilesWords: a value of the wrong type is told as
// FILE:LINE: KEY: what is wrong; what is expected, never in Go's words
// ("cannot unmarshal !!str into time.Duration"), and a typo'd key inside a
// source is the unknown key with the key meant (issue 38, item 2). The zero
// value the YAML library leaves behind is not a second problem.
func TestWrongTypesInTheFilesWords(t *testing.T) {
	const head = "organizations: [{name: a, api_key_env: K}]\nprojects:\n  - id: p\n"
	for _, c := range []struct{ file, want string }{
		{"cluster:\n  address: localhost:6379\n  timeout: 2 seconds\n" + strings.TrimPrefix(head, ""),
			`c.yml:3: cluster.timeout: "2 seconds" is not a duration; expected a duration such as 30s or 2m (units ms, s, m, h)`},
		{head + "    windows: 1d\n", `c.yml:4: projects[0].windows: "1d" is one value, not a list; expected a list such as [1d]`},
		{head + "    sources:\n      feedback: {feedback_pages: abc}\n",
			`c.yml:5: projects[0].sources.feedback.feedback_pages: "abc" is not a whole number; expected a whole number such as 10`},
		{head + "    sources:\n      searches: {windwos: [1d]}\n", `c.yml:5: unknown key "windwos" in projects[0].sources.searches; did you mean "windows"?`},
		{head + "    sources:\n      searches: {windwos: 5}\n", `c.yml:5: unknown key "windwos" in projects[0].sources.searches; did you mean "windows"?`},
		{"organizations: [{name: a, api_key_env: K, analytics_budget: lots}]\nprojects: [{id: p}]\n",
			`c.yml:1: organizations[0].analytics_budget: "lots" is not a whole number; expected a whole number such as 10`},
		{head + "    agent_jobs: maybe\n", `c.yml:4: projects[0].agent_jobs: "maybe" is not true or false; expected true or false`},
	} {
		_, err := Parse("c.yml", []byte(c.file), 5*time.Minute)
		if err == nil {
			t.Errorf("no error for\n%s", c.file)
			continue
		}
		if got := err.Error(); got != c.want {
			t.Errorf("problems\n%s\nwant exactly\n%s", got, c.want)
		}
	}
}
