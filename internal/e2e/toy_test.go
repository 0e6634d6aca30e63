package e2e

import (
	"context"
	"encoding/json"
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
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// A fifth kind of operation, testdata/toy, proves what a kind is: its
// package and its line in the registry (internal/ops/kinds/kinds.go), and
// nothing else. The exporter built with that one line more (toyBinary)
// runs the toy through the kinds' tables (kill -9, replicas, Redis stall:
// its rows there), and shows it on /metrics, on the status page (a
// heading, a header link, rows) and in config check (TestToyKind).

// toyRegistryLine is the toy's line in the registry.
const toyRegistryLine = `import _ "github.com/mintlify-exporter/mintlify_exporter/internal/e2e/testdata/toy"`

var toyBuild struct {
	once sync.Once
	bin  string
	err  error
}

// toyBinary is the exporter built with the toy's registry line, once per
// run of the tests (removed by TestMain).
func toyBinary(t *testing.T) string {
	t.Helper()
	toyBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "mintlify_exporter-toy-")
		if err != nil {
			toyBuild.err = err
			return
		}
		registry := filepath.Join(repoRoot(), "internal", "ops", "kinds", "kinds.go")
		data, err := os.ReadFile(registry)
		if err != nil {
			toyBuild.err = err
			return
		}
		// The toy's package is a file of the tests (toy_test.go, so that
		// nothing but this build compiles it), built as toy.go.
		toy := filepath.Join(repoRoot(), "internal", "e2e", "testdata", "toy")
		kinds, overlay := filepath.Join(dir, "kinds.go"), filepath.Join(dir, "overlay.json")
		replace, _ := json.Marshal(map[string]map[string]string{"Replace": {registry: kinds,
			filepath.Join(toy, "toy.go"): filepath.Join(toy, "toy_test.go"), filepath.Join(toy, "toy_test.go"): ""}})
		if err := os.WriteFile(kinds, append(data, "\n"+toyRegistryLine+"\n"...), 0o600); err != nil {
			toyBuild.err = err
			return
		}
		if err := os.WriteFile(overlay, replace, 0o600); err != nil {
			toyBuild.err = err
			return
		}
		toyBuild.bin = filepath.Join(dir, "mintlify_exporter")
		cmd := exec.Command("go", "build", "-overlay", overlay, "-o", toyBuild.bin, ".")
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			toyBuild.err = fmt.Errorf("go build with the toy kind: %v\n%s", err, out)
		}
	})
	if toyBuild.err != nil {
		t.Fatal(toyBuild.err)
	}
	return toyBuild.bin
}

// removeToyBinary removes what toyBinary built.
func removeToyBinary() {
	if toyBuild.bin != "" {
		_ = os.RemoveAll(filepath.Dir(toyBuild.bin))
	}
}

// toyKind is the toy's row of the tables: a toy is an agent job upstream
// (the fake's), running 4 s.
var toyKind = kill9Kind{stallKind: stallKind{name: "toy", toy: true, endpoint: fakeapi.CreateJob, start: "/api/v1/toy/p1/ops",
	body: `{"prompt":"toy #fake:pr:4s"}`, ids: func(f *fakeapi.Server) []string { return f.JobIDs("p1") },
	view: func(id string) string { return "/api/v1/toy/p1/ops/" + id }, final: "completed",
	finished: "mintlify_toys_finished_total{project=p1,status=completed}"},
	running: "active", hold: func(*fakeapi.Server, bool) {},
	unknown: "/api/v1/toy/p1/unknown-starts", gauge: "mintlify_toy_unknown_outcomes{project=p1}",
	series: "mintlify_toy", runningSeries: "mintlify_toys_in_progress{project=p1}"}

// binary is the exporter that has the row's kind.
func (k stallKind) binary(t *testing.T) string {
	if k.toy {
		return toyBinary(t)
	}
	return exporterBin
}

// flags turn on the routes of every kind (the toy's too, for its row).
func (k stallKind) flags() []string {
	var out []string
	for _, kind := range engine.Kinds() {
		out = append(out, "--"+kind.Declare().Routes.Flag)
	}
	if k.toy {
		out = append(out, "--web.enable-toy-api")
	}
	return out
}

// TestToyKind: the exporter with the toy's registry line takes toys: its
// routes start and follow one to its end, /metrics counts it, the status
// page shows its section (a heading, a link in the header, its row), the
// JSON its rows, config check its key, and the retention forgets it.
func TestToyKind(t *testing.T) {
	t.Parallel()
	fake := fakeapi.New(fakeapi.Options{Projects: []string{"p1"}})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	x := testutil.StartExporter(t, toyBinary(t), []string{"MINTLIFY_API_KEY=mint_test"}, "--mintlify.api-url="+srv.URL, "--mintlify.project=p1",
		"--web.enable-toy-api", "--agent.state-file="+filepath.Join(t.TempDir(), "agent.db"), "--agent.poll-interval=200ms", "--agent.retention=15s")
	testutil.WaitHTTP(t, x.Base+"/-/ready", 15*time.Second, nil)
	client := &http.Client{Timeout: 30 * time.Second}
	code, data, _ := call(t, client, "POST", x.Base+"/api/v1/toy/p1/ops", "toy-1", `{"prompt":"toy #fake:pr:1s"}`)
	var v struct{ ID, Status string }
	if code/100 != 2 || json.Unmarshal(data, &v) != nil || v.ID == "" {
		t.Fatalf("start a toy: HTTP %d %s", code, data)
	}
	blackbox.WaitMetrics(t, x.Base, 0, map[string]float64{"mintlify_toys_finished_total{project=p1,status=completed}": 1,
		"mintlify_toy_unknown_outcomes{project=p1}": 0, "mintlify_toys_in_progress{project=p1}": 0})

	body, status, err := testutil.Get(context.Background(), x.Base+"/")
	if err != nil || status != http.StatusOK {
		t.Fatalf("status page: HTTP %d %v", status, err)
	}
	for _, want := range []string{`<h2 id="toys">Toys</h2>`, `<a href="/api/v1/toy/p1/ops">Toys of p1</a>`,
		`<tr class="row" data-kind="toys" data-project="p1">`, "<code>" + v.ID + "</code>"} {
		if !strings.Contains(body, want) {
			t.Errorf("the status page lacks %s", want)
		}
	}
	var rows []struct{ Project, ID, Status string }
	if r := blackbox.StatusReport(t, x.Base); r.Jobs == nil || r.Jobs.Rows("toys", &rows) != nil || len(rows) != 1 || rows[0].Status != "completed" {
		t.Errorf("the status JSON's toys: %+v", rows)
	}
	file := filepath.Join(t.TempDir(), "c.yml")
	blackbox.WriteFile(t, file, "organizations: [{name: acme, api_key_env: K}]\nprojects:\n  - {id: p1, toys: true}\n")
	out, err := exec.Command(toyBinary(t), "config", "check", "--config.file="+file).CombinedOutput()
	if !strings.Contains(string(out), "automations off, toys on") {
		t.Errorf("config check does not show the project's toys (%v):\n%s", err, out)
	}
	// The retention leaves the checks above 15 s (3 s once ran out under
	// -race on a loaded machine before the status JSON was read).
	blackbox.Eventually(t, 0, "the toy forgotten after the retention", func() bool {
		code, _, _ := call(t, client, "GET", x.Base+"/api/v1/toy/p1/ops/"+v.ID, "", "")
		return code == http.StatusNotFound
	})
	x.Stop(t)
}
