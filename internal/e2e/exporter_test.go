package e2e

import (
	"bytes"
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

func TestBadFlagsExitWithOneLineNamingTheFlag(t *testing.T) {
	t.Parallel()
	withKey := []string{"MINTLIFY_API_KEY=mint_x"}
	cases := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"window", []string{"--mintlify.project=p", "--analytics.window=3x"}, withKey, "--analytics.window"},
		{"window zero", []string{"--mintlify.project=p", "--analytics.window=0d"}, withKey, "--analytics.window"},
		{"page size 0", []string{"--mintlify.project=p", "--analytics.page-size=0"}, withKey, "--analytics.page-size"},
		{"page size 300", []string{"--mintlify.project=p", "--analytics.page-size=300"}, withKey, "--analytics.page-size"},
		{"timezone", []string{"--mintlify.project=p", "--analytics.timezone=Mars/Olympus"}, withKey, "--analytics.timezone"},
		{"include regex", []string{"--mintlify.project=p", "--analytics.path-include=("}, withKey, "--analytics.path-include"},
		{"exclude regex", []string{"--mintlify.project=p", "--analytics.path-exclude=[a-"}, withKey, "--analytics.path-exclude"},
		{"negative ttl", []string{"--mintlify.project=p", "--visitors.cache-ttl=-5m"}, withKey, "visitors.cache-ttl"},
		{"zero ttl", []string{"--mintlify.project=p", "--visitors.cache-ttl=0s"}, withKey, "--visitors.cache-ttl"},
		{"budget zero", []string{"--mintlify.project=p", "--mintlify.analytics-budget=0"}, withKey, "--mintlify.analytics-budget"},
		{"budget negative", []string{"--mintlify.project=p", "--mintlify.analytics-budget=-5"}, withKey, "--mintlify.analytics-budget"},
		{"budget not a number", []string{"--mintlify.project=p", "--mintlify.analytics-budget=lots"}, withKey, "--mintlify.analytics-budget"},
		{"window interval", []string{"--mintlify.project=p", "--analytics.window=30d:soon"}, withKey, "--analytics.window"},
		{"window interval below ttl", []string{"--mintlify.project=p", "--analytics.window=7d:1m"}, withKey, "--analytics.window"},
		{"final day delay", []string{"--mintlify.project=p", "--analytics.final-day-delay=2h"}, withKey, "--analytics.final-day-delay"},
		{"backfill to today", []string{"--mintlify.project=p", "backfill", "--from=2020-01-01", "--to=" + time.Now().Add(24*time.Hour).Format("2006-01-02")}, withKey, "--to"},
		{"backfill from after to", []string{"--mintlify.project=p", "backfill", "--from=2020-02-01", "--to=2020-01-01"}, withKey, "--from"},
		{"backfill bad date", []string{"--mintlify.project=p", "backfill", "--from=2020-13-01", "--to=2020-01-01"}, withKey, "--from"},
		{"backfill without from", []string{"--mintlify.project=p", "backfill", "--to=2020-01-01"}, withKey, "--from"},
		{"backfill label", []string{"--mintlify.project=p", "backfill", "--from=2020-01-01", "--to=2020-01-01", "--backfill.label=path=/x"}, withKey, "--backfill.label"},
		{"backfill concurrency", []string{"--mintlify.project=p", "backfill", "--from=2020-01-01", "--to=2020-01-01", "--backfill.concurrency=0"}, withKey, "--backfill.concurrency"},
		{"timeout", []string{"--mintlify.project=p", "--mintlify.timeout=abc"}, withKey, "mintlify.timeout"},
		{"retries", []string{"--mintlify.project=p", "--mintlify.max-retries=-1"}, withKey, "--mintlify.max-retries"},
		{"log level", []string{"--mintlify.project=p", "--log.level=loud"}, withKey, "log.level"},
		{"unknown flag", []string{"--mintlify.api-key=mint_x"}, nil, "mintlify.api-key"},
		{"poll interval", []string{"--mintlify.project=p", "--agent.poll-interval=0s"}, withKey, "--agent.poll-interval"},
		{"poll interval too short", []string{"--mintlify.project=p", "--agent.poll-interval=5ms"}, withKey, "--agent.poll-interval"},
		{"too many concurrent polls", []string{"--mintlify.project=p", "--agent.max-concurrent-polls=1001"}, withKey, "--agent.max-concurrent-polls"},
		{"prompt bytes over 16MiB", []string{"--mintlify.project=p", "--agent.max-prompt-bytes=17MiB"}, withKey, "--agent.max-prompt-bytes"},
		{"empty state file", []string{"--mintlify.project=p", "--agent.state-file="}, withKey, "--agent.state-file"},
		{"prompt bytes", []string{"--mintlify.project=p", "--agent.max-prompt-bytes=0"}, withKey, "--agent.max-prompt-bytes"},
		{"static export start limit negative", []string{"--mintlify.project=p", "--static-export.start-limit=-1"}, withKey, "--static-export.start-limit"},
		{"static export start limit not a number", []string{"--mintlify.project=p", "--static-export.start-limit=many"}, withKey, "--static-export.start-limit"},
		{"api url", []string{"--mintlify.project=p", "--mintlify.api-url=ftp://x"}, withKey, "--mintlify.api-url"},
		{"max requests", []string{"--mintlify.project=p", "--web.max-requests=-1"}, withKey, "--web.max-requests"},
		{"telemetry path", []string{"--mintlify.project=p", "--web.telemetry-path=metrics"}, withKey, "--web.telemetry-path"},
		{"telemetry path on the gateway", []string{"--mintlify.project=p", "--web.telemetry-path=/api/"}, withKey, "--web.telemetry-path"},
		{"telemetry path on health", []string{"--mintlify.project=p", "--web.telemetry-path=/-/healthy"}, withKey, "--web.telemetry-path"},
		{"telemetry path on ready", []string{"--mintlify.project=p", "--web.telemetry-path=/-/ready"}, withKey, "--web.telemetry-path"},
		{"telemetry path on reload", []string{"--mintlify.project=p", "--web.telemetry-path=/-/reload"}, withKey, "--web.telemetry-path"},
		{"telemetry path on the status page", []string{"--mintlify.project=p", "--web.telemetry-path=/"}, withKey, "--web.telemetry-path"},
		{"endless key file", []string{"--mintlify.project=p", "--mintlify.api-key-file=/dev/zero"}, nil, "--mintlify.api-key-file"},
		{"max paths", []string{"--mintlify.project=p", "--analytics.max-paths=-10"}, withKey, "--analytics.max-paths"},
		{"max paths not a number", []string{"--mintlify.project=p", "--analytics.max-paths=many"}, withKey, "--analytics.max-paths"},
		{"concurrent polls", []string{"--mintlify.project=p", "--agent.max-concurrent-polls=0"}, withKey, "--agent.max-concurrent-polls"},
		{"retention", []string{"--mintlify.project=p", "--agent.retention=0s"}, withKey, "--agent.retention"},
		{"archive watch", []string{"--mintlify.project=p", "--agent.archive-watch=-1h"}, withKey, "--agent.archive-watch"},
		{"log format", []string{"--mintlify.project=p", "--log.format=xml"}, withKey, "--log.format"},
		{"project id", []string{"--mintlify.project=a/b"}, withKey, "--mintlify.project"},
		{"empty project id", []string{"--mintlify.project= "}, withKey, "--mintlify.project"},
		{"non-UTF-8 project id", []string{"--mintlify.project=a\xffb"}, withKey, "--mintlify.project"},
		{"no key", []string{"--mintlify.project=p"}, nil, "MINTLIFY_API_KEY"},
		{"no project", nil, withKey, "--mintlify.project"},
		{"missing key file", []string{"--mintlify.project=p", "--mintlify.api-key-file=/nonexistent/key"}, nil, "--mintlify.api-key-file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testutil.Slack(20*time.Second))
			defer cancel()
			args := tc.args
			if !slices.Contains(args, "backfill") { // a serve flag: the backfill command has none
				args = append([]string{"--web.listen-address=127.0.0.1:0"}, args...)
			}
			cmd := exec.CommandContext(ctx, exporterBin, args...)
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, tc.env...)
			var stderr, stdout bytes.Buffer
			cmd.Stderr, cmd.Stdout = &stderr, &stdout
			err := testutil.Run(cmd)
			if ctx.Err() != nil {
				t.Fatalf("exporter kept running with %v", tc.args)
			}
			if err == nil || cmd.ProcessState.ExitCode() == 0 {
				t.Fatalf("exit code 0 for %v", tc.args)
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			last := lines[len(lines)-1]
			if !strings.Contains(last, tc.want) {
				t.Errorf("error line %q does not name %s", last, tc.want)
			}
			// The error is one line, with nothing before it.
			if len(lines) != 1 {
				t.Errorf("want 1 line on stderr, got %d:\n%s", len(lines), stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("usage or output on stdout for a bad flag:\n%s", stdout.String())
			}
		})
	}
}

func TestSandboxServesVisitorMetricsAndShutsDownCleanly(t *testing.T) {
	t.Parallel()
	p := startExporter(t, nil, "--mintlify.sandbox")
	body := testutil.WaitHTTP(t, p.Base+"/metrics", 20*time.Second, func(b string) bool {
		return strings.Contains(b, `mintlify_page_unique_visitors{`)
	})
	for _, want := range []string{
		`mintlify_site_unique_visitors{project="acme-docs",traffic="human",window="1d"}`,
		`mintlify_site_unique_visitors_deduplicated{project="acme-api",window="1d"}`,
		`mintlify_analytics_refresh_success{project="acme-docs",scope="pages",source="visitors",window="1d"} 1`,
		`mintlify_api_requests_total{code="200",endpoint="visitors"}`,
		`mintlify_exporter_build_info{`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	testutil.CheckMetrics(t, body)
	// Every HELP of ours is one short sentence, whichever package wrote it
	// (build_info's is client_golang's).
	for _, line := range strings.Split(body, "\n") {
		name, help, _ := strings.Cut(strings.TrimPrefix(line, "# HELP "), " ")
		if strings.HasPrefix(line, "# HELP mintlify_") && name != "mintlify_exporter_build_info" {
			if p := testutil.HelpProblem(help); p != "" {
				t.Errorf("%s: %s: %q", name, p, help)
			}
		}
	}

	ctx := context.Background()
	for path, want := range map[string]int{"/-/healthy": 200, "/-/ready": 200, "/": 200, "/api/v2/agent/acme-docs/jobs": 404} {
		b, status, err := testutil.Get(ctx, p.Base+path)
		if err != nil || status != want {
			t.Errorf("GET %s = %d %v, want %d", path, status, err, want)
		}
		if path == "/api/v2/agent/acme-docs/jobs" && !strings.Contains(b, "--web.enable-agent-api") {
			t.Errorf("disabled gateway answer does not say how to enable it: %s", b)
		}
		if path == "/" && !strings.Contains(b, "/metrics") {
			t.Errorf("landing page does not link the metrics: %.300s", b)
		}
	}
	if !strings.Contains(p.Stderr.String(), "metrics") {
		t.Errorf("no log line prints the metrics URL:\n%s", p.Stderr.String())
	}
	p.Stop(t)
}

func TestAPIKeyNeverLeaks(t *testing.T) {
	t.Parallel()
	const key = "mint_TOPSECRET_4242"
	fake := fakeapi.New(fakeapi.Options{Projects: []string{"p1"}, APIKey: key, Paths: 20})
	// A misbehaving upstream that echoes the Authorization header back in
	// error bodies: the key must still not reach logs, metrics or errors.
	// It misbehaves for the first requests only: alternating instead can
	// phase-lock with the plan (every refresh of one demand landing on an
	// echoing turn), and the test then never sees a success.
	var mu sync.Mutex
	echoed := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		e := echoed < 12
		echoed++
		mu.Unlock()
		if e {
			http.Error(w, `{"error":"bad auth header: `+r.Header.Get("Authorization")+`"}`, http.StatusInternalServerError)
			return
		}
		fake.ServeHTTP(w, r)
	}))
	defer srv.Close()
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("  "+key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startExporter(t, nil, "--log.level=debug", "--mintlify.project=p1", "--mintlify.api-url="+srv.URL,
		"--mintlify.api-key-file="+keyFile, "--mintlify.max-retries=0", "--visitors.cache-ttl=1s", "--mintlify.analytics-budget=100000",
		"--analytics.window=1d", "--analytics.window=7d")
	var bodies []string
	testutil.WaitUntil(testutil.Patience, func() bool {
		b, _, err := testutil.Get(context.Background(), p.Base+"/metrics")
		if err != nil {
			return false
		}
		bodies = append(bodies, b)
		return strings.Contains(b, `code="500"`) && strings.Contains(b, `mintlify_analytics_refresh_success{project="p1",scope="pages",source="visitors",window="1d"} 1`) && len(bodies) > 3
	})
	if len(bodies) == 0 {
		t.Fatal("no scrape of /metrics answered")
	}
	last := bodies[len(bodies)-1]
	if !strings.Contains(last, `mintlify_api_requests_total{code="500",endpoint="visitors"}`) {
		t.Fatalf("the echoing upstream was never hit:\n%s", last)
	}
	if !strings.Contains(last, `mintlify_analytics_refresh_success{project="p1",scope="pages",source="visitors",window="1d"} 1`) {
		t.Errorf("key from file (with whitespace) was not accepted:\n%s", last)
	}
	logs := p.Stderr.String()
	if !strings.Contains(logs, "level=debug") || !strings.Contains(logs, "HTTP 500") {
		t.Fatalf("expected debug logs and the upstream error in them:\n%s", logs)
	}
	for i, b := range bodies {
		if strings.Contains(b, "TOPSECRET") {
			t.Errorf("scrape %d contains the key", i)
		}
	}
	if strings.Contains(logs, "TOPSECRET") {
		t.Errorf("logs contain the key:\n%s", logs)
	}
	if strings.Contains(logs, "does not start with mint_") {
		t.Errorf("a mint_ key got the prefix warning")
	}
	p.Stop(t)
}

func TestKeyWithoutPrefixIsWarnedAbout(t *testing.T) {
	t.Parallel()
	fake := httptest.NewServer(fakeapi.New(fakeapi.Options{APIKey: "sk_other"}))
	defer fake.Close()
	p := startExporter(t, []string{"MINTLIFY_API_KEY=sk_other"}, "--mintlify.project=p1", "--mintlify.api-url="+fake.URL)
	testutil.WaitHTTP(t, p.Base+"/-/ready", 10*time.Second, nil)
	if !strings.Contains(p.Stderr.String(), "does not start with mint_") {
		t.Errorf("no warning for a key without the mint_ prefix:\n%s", p.Stderr.String())
	}
	p.Stop(t)
}

func TestEmptyKeyFileIsRefused(t *testing.T) {
	t.Parallel()
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(" \n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The environment's key must not stand in for a broken file.
	cmd := exec.Command(exporterBin, "--web.listen-address=127.0.0.1:0", "--mintlify.project=p", "--mintlify.api-key-file="+keyFile)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "MINTLIFY_API_KEY=mint_from_env"}
	out, err := testutil.CombinedOutput(cmd)
	if err == nil {
		t.Fatalf("exporter started with an empty key file:\n%s", out)
	}
	if !strings.Contains(string(out), "--mintlify.api-key-file") || !strings.Contains(string(out), "is empty") {
		t.Errorf("error does not say the key file is empty:\n%s", out)
	}
}

// TestBackfillCommandOnSandbox runs the backfill subcommand of the built
// binary against the sandbox: the output is OpenMetrics ending in # EOF,
// progress goes to stderr ending with what to run next, the default state
// directory is gone after success, and a given one makes a second run
// fetch nothing again.
func TestBackfillCommandOnSandbox(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "history.om")
	from := time.Now().UTC().AddDate(0, 0, -4).Format("2006-01-02")
	to := time.Now().UTC().AddDate(0, 0, -2).Format("2006-01-02")
	run := func(args ...string) string {
		cmd := exec.Command(exporterBin, append([]string{"backfill", "--mintlify.sandbox", "--mintlify.project=acme-docs",
			"--from=" + from, "--to=" + to, "--output=" + out}, args...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		b, err := testutil.CombinedOutput(cmd)
		if err != nil {
			t.Fatalf("backfill: %v\n%s", err, b)
		}
		return string(b)
	}
	first := run()
	if !strings.Contains(first, "backfill: 9 walks (1 projects × 3 days; visitors 1d, views 1d, searches 1d)") || !strings.Contains(first, "requests to go for 6 walks") ||
		!strings.Contains(first, "next: promtool tsdb create-blocks-from openmetrics --max-block-duration=486h "+out) {
		t.Errorf("no plan or next-step line:\n%s", first)
	}
	if _, err := os.Stat(out + ".days"); !os.IsNotExist(err) {
		t.Errorf("default state directory left behind: %v", err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if !strings.HasSuffix(text, "# EOF\n") || !strings.Contains(text, `mintlify_site_unique_visitors{project="acme-docs",window="yesterday",traffic="human"}`) {
		t.Fatalf("output is not the expected OpenMetrics:\n%.500s", text)
	}
	state := "--backfill.state-dir=" + filepath.Join(dir, "days")
	run(state)
	if second := run(state); !strings.Contains(second, "all 9 walks already fetched") {
		t.Errorf("second run fetched again:\n%s", second)
	}
}

// TestLandingPageLinksAreServed: every link of the landing page answers
// 200, and no profiling link points at handlers that are not served.
func TestLandingPageLinksAreServed(t *testing.T) {
	t.Parallel()
	p := startExporter(t, nil, "--mintlify.sandbox", "--web.enable-agent-api")
	body := testutil.WaitHTTP(t, p.Base+"/", 10*time.Second, nil)
	if strings.Contains(body, "debug/pprof") {
		t.Errorf("the landing page links to pprof, which is not served")
	}
	links := regexp.MustCompile(`href="(/[^"]*)"`).FindAllStringSubmatch(body, -1)
	if len(links) < 3 {
		t.Fatalf("only %d links on the landing page:\n%s", len(links), body)
	}
	for _, l := range links {
		_, status, err := testutil.Get(context.Background(), p.Base+html.UnescapeString(l[1]))
		if err != nil || status != http.StatusOK {
			t.Errorf("landing page link %s: HTTP %d, %v", l[1], status, err)
		}
	}
	p.Stop(t)
}

// TestGatewayWarningFollowsBasicAuth: the "anyone can open pull requests"
// warning is for a gateway without basic auth only.
func TestGatewayWarningFollowsBasicAuth(t *testing.T) {
	t.Parallel()
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(webConfig, []byte("basic_auth_users:\n  bot: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Paths: 20, APIKey: "mint_test"})
	open := startExporter(t, []string{"MINTLIFY_API_KEY=mint_test"}, "--mintlify.project=docs", "--mintlify.api-url="+api.URL, "--web.enable-agent-api")
	sandbox := startExporter(t, nil, "--mintlify.sandbox", "--web.enable-agent-api")
	guarded := startExporter(t, nil, "--mintlify.sandbox", "--web.enable-agent-api", "--web.config.file="+webConfig)
	// Each logs what it says of the gateway before it listens.
	for _, x := range []*testutil.Exporter{open, sandbox, guarded} {
		testutil.WaitUntil(testutil.Patience, func() bool { return strings.Contains(x.Stderr.String(), "gateway enabled") })
	}
	if o := gatewayLine(open); !strings.Contains(o, " level=warn ") || !strings.Contains(o, "without basic auth") {
		t.Errorf("no warning for a gateway without basic auth on a real key: %q", o)
	}
	if s := gatewayLine(sandbox); !strings.Contains(s, " level=info ") || !strings.Contains(s, "without basic auth, on the sandbox") {
		t.Errorf("the sandbox's open gateway is not information: %q", s)
	}
	if g := gatewayLine(guarded); !strings.Contains(g, " level=info ") || !strings.Contains(g, "behind the basic auth") {
		t.Errorf("a gateway behind basic auth is warned about: %q", g)
	}
	open.Stop(t)
	sandbox.Stop(t)
	guarded.Stop(t)
}

// gatewayLine is the exporter's log line about its job gateway.
func gatewayLine(x *testutil.Exporter) string {
	for _, line := range strings.Split(x.Stderr.String(), "\n") {
		if strings.Contains(line, "gateway enabled") {
			return line
		}
	}
	return ""
}

func TestHashPasswordCommand(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(exporterBin, "hash-password")
	cmd.Stdin = strings.NewReader("correct horse\n")
	out, err := testutil.Output(cmd)
	if err != nil {
		t.Fatalf("hash-password: %v", err)
	}
	if err := bcrypt.CompareHashAndPassword(bytes.TrimSpace(out), []byte("correct horse")); err != nil {
		t.Errorf("printed %q, not a bcrypt hash of the password: %v", out, err)
	}
}

// TestBackfillOfSeveralOrganizations: each organization is backfilled on
// its own budget into its own output, OUTPUT-ORGANIZATION; standard output
// cannot hold several and is refused.
func TestBackfillOfSeveralOrganizations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	day := time.Now().UTC().AddDate(0, 0, -3).Format("2006-01-02")
	args := []string{"backfill", "--mintlify.sandbox", "--config.file=" + filepath.Join(examplesDir(), "mintlify.yml"), "--from=" + day, "--to=" + day, "--backfill.source=visitors"}
	cmd := exec.Command(exporterBin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if b, err := testutil.CombinedOutput(cmd); err == nil || !strings.Contains(string(b), "--output: the configuration has several organizations") {
		t.Errorf("backfill of two organizations to standard output: %v\n%s", err, b)
	}
	out := filepath.Join(dir, "history.om")
	cmd = exec.Command(exporterBin, append(args, "--output="+out)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if b, err := testutil.CombinedOutput(cmd); err != nil {
		t.Fatalf("backfill: %v\n%s", err, b)
	}
	for org, project := range map[string]string{"acme": "acme-docs", "globex": "globex-docs"} {
		data, err := os.ReadFile(out + "-" + org)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), `project="`+project+`"`) || !strings.HasSuffix(string(data), "# EOF\n") {
			t.Errorf("%s-%s lacks %s's samples or its # EOF", out, org, project)
		}
	}
}

// TestCommandHelpListsItsOwnFlagsFirst: backfill --help starts with the
// backfill's own flags, not with the ~50 flags every command shares (most
// of them the server's), and the top-level --help still lists every
// command.
func TestCommandHelpListsItsOwnFlagsFirst(t *testing.T) {
	t.Parallel()
	out, err := testutil.CombinedOutput(exec.Command(exporterBin, "backfill", "--help"))
	if err != nil {
		t.Fatalf("backfill --help: %v\n%s", err, out)
	}
	help := string(out)
	own, shared := strings.Index(help, "\nFlags of backfill:\n"), strings.Index(help, "\nFlags of every command:\n")
	if own < 0 || shared < own {
		t.Fatalf("backfill --help does not list its own flags before the shared ones:\n%s", help)
	}
	for _, f := range []string{"--from=", "--to=", "--output=", "--output.format=", "--backfill.label="} {
		if i := strings.Index(help[own:], f); i < 0 || own+i > shared {
			t.Errorf("backfill --help: %s is not among the backfill's own flags", f)
		}
	}
	for _, f := range []string{"--log.level=", "--mintlify.project=", "--analytics.max-staleness="} {
		if i := strings.Index(help, f); i < shared {
			t.Errorf("backfill --help: shared flag %s comes before the shared flags' heading", f)
		}
	}
	if lines := strings.Count(help[:shared], "\n"); lines > 50 {
		t.Errorf("backfill --help: %d lines before the shared flags", lines)
	}
	out, err = testutil.CombinedOutput(exec.Command(exporterBin, "--help"))
	// The default command's flags are not in it: it says where they are.
	if err != nil || !strings.Contains(string(out), "\nFlags:\n") || !strings.Contains(string(out), "\nCommands:\n") ||
		strings.Contains(string(out), "Flags of") || !strings.Contains(string(out), "listed by serve --help") {
		t.Errorf("--help: %v\n%s", err, out)
	}
}

// TestMakeRunStartsWithoutFaults: `make run`, the quick start, logs no
// warning or error once its refresh plan is known (its job gateway without
// basic auth is simulated); a budget that refreshes some of the demo's
// windows less often than --analytics.max-staleness is information.
func TestMakeRunStartsWithoutFaults(t *testing.T) {
	t.Parallel()
	x := startExporter(t, nil, makeRunArgs(t)...)
	blackbox.Eventually(t, 0, "the refresh plan", func() bool {
		return strings.Contains(x.Stderr.String(), `msg="analytics refresh plan" budget_per_hour=`)
	})
	// Every family make run serves, the gateway's and deployments' too.
	checkHelpLines(t, testutil.WaitHTTP(t, x.Base+"/metrics", testutil.Patience, func(b string) bool {
		return strings.Contains(b, "# HELP mintlify_site_unique_visitors ")
	}))
	x.Stop(t)
	for _, line := range strings.Split(strings.TrimSpace(x.Stderr.String()), "\n") {
		fault := strings.Contains(line, " level=warn ") || strings.Contains(line, " level=error ")
		if fault {
			t.Errorf("make run logs a fault: %s", line)
		}
		if strings.Contains(line, "less often than --analytics.max-staleness") && !strings.Contains(line, " level=info ") {
			t.Errorf("the budget's plan is not logged as information: %s", line)
		}
	}
}
