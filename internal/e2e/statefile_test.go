package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// TestKill9WithIdempotencyKeys kills the exporter with SIGKILL during a
// burst of keyed submissions, restarts it, and has every client retry
// every key: each key ends with one job (the one acknowledged before the
// kill, if any) or a create of unknown outcome, and no key ever gets a
// second job upstream.
func TestKill9WithIdempotencyKeys(t *testing.T) {
	t.Parallel()
	fake := fakeapi.New(fakeapi.Options{Projects: []string{"p1"}})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	statePath := filepath.Join(t.TempDir(), "agent.db")
	x := startAgentExporter(t, srv.URL, statePath)

	var (
		mu        sync.Mutex
		attempted = map[string]string{} // key -> prompt
		acked     = map[string]string{} // key -> job id
		wg        sync.WaitGroup
	)
	ctx, stop := context.WithCancel(context.Background())
	client := &http.Client{Timeout: 10 * time.Second}
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil && i < 15; i++ {
				key, prompt := fmt.Sprintf("key-%d-%d", w, i), fmt.Sprintf("burst %d/%d #fake:nopr:3s", w, i)
				mu.Lock()
				attempted[key] = prompt
				mu.Unlock()
				status, id, err := blackbox.SubmitKeyed(client, x.Base+"/api/v2/agent/p1/job", key, prompt)
				if err != nil {
					return // killed under us
				}
				if status/100 == 2 {
					mu.Lock()
					acked[key] = id
					mu.Unlock()
				}
			}
		})
	}
	blackbox.Eventually(t, 10*time.Second, "20 acknowledged submissions", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 20
	})
	x.Kill(t)
	stop()
	wg.Wait()
	before := fake.JobCount()

	x = startAgentExporter(t, srv.URL, statePath)
	defer x.Stop(t)
	jobs := map[string]string{} // job id -> key
	unknown := 0
	for round := range 2 {
		for key, prompt := range attempted {
			status, msg, err := blackbox.SubmitKeyed(client, x.Base+"/api/v2/agent/p1/job", key, prompt)
			switch {
			case err != nil:
				t.Fatal(err)
			case status/100 == 2:
				if k, ok := jobs[msg]; ok && k != key {
					t.Errorf("keys %s and %s answered with one job %s", k, key, msg)
				}
				if old, ok := acked[key]; ok && old != msg {
					t.Errorf("key %s: job %s before the kill, %s after", key, old, msg)
				}
				if round == 1 && jobs[msg] != key {
					t.Errorf("key %s: a new job on the second retry", key)
				}
				jobs[msg] = key
			case status == http.StatusConflict && strings.Contains(msg, "unknown"):
				if _, ok := acked[key]; ok {
					t.Errorf("acknowledged key %s reported of unknown outcome", key)
				}
				if round == 0 {
					unknown++
				}
			default:
				t.Errorf("key %s: HTTP %d %s", key, status, msg)
			}
		}
	}
	body, _, err := blackbox.GetBody(x.Base + "/api/v2/agent/p1/unknown-creates")
	if err != nil {
		t.Fatal(err)
	}
	var l unknownCreateList
	if err := json.Unmarshal(body, &l); err != nil || len(l.UnknownCreates) != unknown {
		t.Errorf("listed %d unknown creates (%v), %d answered 409", len(l.UnknownCreates), err, unknown)
	}
	after := fake.JobCount()
	t.Logf("%d keys tried, %d acknowledged before kill -9; %d jobs upstream before the retries, %d after; %d keys with a job, %d of unknown outcome",
		len(attempted), len(acked), before, after, len(jobs), unknown)
	// Every job upstream belongs to one key: a key with a job, or one of
	// unknown outcome (whose job may or may not exist).
	if after > len(jobs)+unknown {
		t.Errorf("%d jobs upstream for %d keys with a job and %d of unknown outcome: a duplicate", after, len(jobs), unknown)
	}
}

// runExporter runs the built binary with args to its end, and returns its
// exit code and output.
func runExporter(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Slack(30*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, exporterBin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "MINTLIFY_API_KEY=mint_test"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = testutil.Run(cmd)
	if ctx.Err() != nil {
		t.Fatalf("%v kept running", args)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// TestDamagedStateFile cuts a real state file short and checks that the
// exporter refuses it with one line (no panic), leaves it as it is, and
// that `state check` and `state salvage` handle it.
func TestDamagedStateFile(t *testing.T) {
	t.Parallel()
	fake := fakeapi.New(fakeapi.Options{Projects: []string{"p1"}})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	statePath := filepath.Join(dir, "agent.db")
	x := startAgentExporter(t, srv.URL, statePath)
	for i := range 60 {
		status, _, err := blackbox.SubmitKeyed(http.DefaultClient, x.Base+"/api/v2/agent/p1/job", fmt.Sprintf("k%d", i), fmt.Sprintf("job %d %s #fake:nopr:1h", i, strings.Repeat("padding ", 40)))
		if err != nil || status/100 != 2 {
			t.Fatalf("submit %d: HTTP %d %v", i, status, err)
		}
	}
	x.Stop(t)
	data, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	damaged := data[:len(data)/2]
	if err := os.WriteFile(statePath, damaged, 0o600); err != nil {
		t.Fatal(err)
	}

	run := func(args ...string) (int, string, string) { return runExporter(t, args...) }

	code, _, stderr := run("--web.listen-address=127.0.0.1:0", "--mintlify.api-url="+srv.URL, "--mintlify.project=p1",
		"--web.enable-agent-api", "--agent.state-file="+statePath)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if code == 0 || strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine") {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	for _, want := range []string{statePath, "damaged", "cut short", "state salvage"} {
		if !strings.Contains(last, want) {
			t.Errorf("last line lacks %q: %s", want, last)
		}
	}
	for _, l := range lines[:len(lines)-1] {
		if !strings.Contains(l, "level=info") {
			t.Errorf("more than one error line: %s", l)
		}
	}
	if after, _ := os.ReadFile(statePath); !bytes.Equal(after, damaged) {
		t.Error("the damaged file was changed")
	}

	code, stdout, stderr := run("state", "check", statePath)
	if code != 1 || !strings.Contains(stdout, "status: DAMAGED") || !strings.Contains(stderr, "state salvage") {
		t.Errorf("check: exit %d\n%s\n%s", code, stdout, stderr)
	}
	newPath := filepath.Join(dir, "salvaged.db")
	code, stdout, stderr = run("state", "salvage", statePath, newPath)
	if code != 0 || !strings.Contains(stdout, "salvaged") {
		t.Fatalf("salvage: exit %d\n%s\n%s", code, stdout, stderr)
	}
	t.Logf("salvage of half a file:\n%s", stdout)
	if code, stdout, _ := run("state", "check", newPath); code != 0 || !strings.Contains(stdout, "status: healthy") {
		t.Errorf("check of the salvaged file: exit %d\n%s", code, stdout)
	}
	if after, _ := os.ReadFile(statePath); !bytes.Equal(after, damaged) {
		t.Error("salvage changed the damaged file")
	}
	// The exporter starts on the salvaged file with what was readable.
	x = startAgentExporter(t, srv.URL, newPath)
	n := len(x.jobs(t))
	x.Stop(t)
	if n == 0 || n > 60 {
		t.Errorf("%d jobs from the salvaged file", n)
	}
	t.Logf("%d of 60 jobs salvaged from half a state file", n)
}

// TestStateFileRemovedWhileRunning deletes the state file under a running
// exporter: the next keyed create is refused with a JSON 503 and sent
// nowhere, and the metrics say why.
func TestStateFileRemovedWhileRunning(t *testing.T) {
	t.Parallel()
	fake, _, statePath, x := startFakeAndExporter(t)
	defer x.Stop(t)
	url := x.Base + "/api/v2/agent/p1/job"
	if status, _, err := blackbox.SubmitKeyed(http.DefaultClient, url, "before", "#fake:nopr:1h"); err != nil || status != http.StatusCreated {
		t.Fatalf("create: HTTP %d %v", status, err)
	}
	if err := os.Remove(statePath); err != nil {
		t.Fatal(err)
	}
	jobs := fake.JobCount()
	status, msg, err := blackbox.SubmitKeyed(http.DefaultClient, url, "after", "#fake:nopr:1h")
	if err != nil || status != http.StatusServiceUnavailable || !strings.Contains(msg, "deleted or moved away") || !strings.Contains(msg, "intent ci_") {
		t.Errorf("create after rm: HTTP %d %v %q", status, err, msg)
	}
	if fake.JobCount() != jobs {
		t.Error("a create was sent upstream without a state file")
	}
	blackbox.Eventually(t, 10*time.Second, "mintlify_agent_state_file_replaced 1", func() bool {
		return x.metrics(t)["mintlify_agent_state_file_replaced{}"] == 1
	})
	if m := x.metrics(t); m["mintlify_agent_state_write_errors_total{}"] < 1 {
		t.Errorf("write errors: %v", m["mintlify_agent_state_write_errors_total{}"])
	}
}

// TestStateFileWithAChangedRecord changes one byte inside a job record of
// a real state file: the exporter refuses to start (the job's
// Idempotency-Key must not become reusable), `state check` calls the file
// damaged, and `state salvage` rebuilds the job from its id, saying its key
// is lost.
func TestStateFileWithAChangedRecord(t *testing.T) {
	t.Parallel()
	_, apiURL, statePath, x := startFakeAndExporter(t)
	dir := filepath.Dir(statePath)
	status, id, err := blackbox.SubmitKeyed(http.DefaultClient, x.Base+"/api/v2/agent/p1/job", "k1", "#fake:nopr:1h")
	if err != nil || status != http.StatusCreated {
		t.Fatalf("create: HTTP %d %v", status, err)
	}
	x.Stop(t)
	data, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	needle := []byte(`"job":{"id":"` + id + `"`)
	if bytes.Count(data, needle) == 0 {
		t.Fatal("record not found in the file")
	}
	data = bytes.ReplaceAll(data, needle, append([]byte(`"job":[`), needle[7:]...))
	if err := os.WriteFile(statePath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) { return runExporter(t, args...) }
	code, _, stderr := run("--web.listen-address=127.0.0.1:0", "--mintlify.api-url="+apiURL, "--mintlify.project=p1",
		"--web.enable-agent-api", "--agent.state-file="+statePath)
	if code == 0 || !strings.Contains(stderr, "1 unreadable record(s)") || !strings.Contains(stderr, "state salvage") {
		t.Fatalf("start: exit %d\n%s", code, stderr)
	}
	code, stdout, _ := run("state", "check", statePath)
	if code != 1 || strings.Contains(stdout, "healthy") || !strings.Contains(stdout, "1 unreadable value") {
		t.Errorf("check: exit %d\n%s", code, stdout)
	}
	newPath := filepath.Join(dir, "salvaged.db")
	code, stdout, _ = run("state", "salvage", statePath, newPath)
	if code != 0 || !strings.Contains(stdout, "salvaged 1 job,") || !strings.Contains(stdout, "idempotency keys are lost") {
		t.Errorf("salvage: exit %d\n%s", code, stdout)
	}
	x = startAgentExporter(t, apiURL, newPath)
	defer x.Stop(t)
	blackbox.Eventually(t, 10*time.Second, "the rebuilt job read upstream", func() bool {
		js := x.jobs(t)
		return len(js) == 1 && js[0].ID == id && js[0].Status == "active" && js[0].Tracking.Rebuilt
	})
	if got := x.metrics(t)["mintlify_agent_state_unreadable_records{project=p1}"]; got != 1 {
		t.Errorf("mintlify_agent_state_unreadable_records = %v", got)
	}
}

// TestSecondExporterOnALockedStateFile: a second exporter given the state
// file of a running one exits with one line naming the lock, before it
// sends a single analytics request (it once started its visitor walks and
// spent budget on the way out).
func TestSecondExporterOnALockedStateFile(t *testing.T) {
	t.Parallel()
	_, _, statePath, first := startFakeAndExporter(t)
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Projects: []string{"p1"}})
	ctx, cancel := context.WithTimeout(t.Context(), testutil.Slack(30*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, exporterBin, "--web.listen-address="+testutil.FreeAddr(t), "--mintlify.api-url="+api.URL,
		"--mintlify.project=p1", "--web.enable-agent-api", "--agent.state-file="+statePath)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "MINTLIFY_API_KEY=mint_test"}
	cmd.Dir = t.TempDir()
	out, err := testutil.CombinedOutput(cmd)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "locked by another process") {
		t.Errorf("second exporter on %s: %v, want exit 1 naming the lock:\n%s", statePath, err, out)
	}
	if sent := api.Sent(); len(sent) != 0 {
		t.Errorf("the second exporter sent %d requests before it exited, e.g. %+v:\n%s", len(sent), sent[0], out)
	}
	if strings.Contains(string(out), "analytics refresh plan") {
		t.Errorf("the second exporter planned walks:\n%s", out)
	}
	first.Stop(t)
}
