package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// TestSIGTERMDrainsCreatesBeforeTheTrackerCloses sends SIGTERM to the
// built exporter while creates are in flight through the gateway: some at
// the API (which is slow to answer them), some still sending their body.
// The server lets them all finish, each is acknowledged, and every
// acknowledged job is in the state file after the exit (checked with
// `state check` and by a restarted exporter). The slow bodies end after
// the fast creates were answered: had the job tracker closed at SIGTERM,
// it would be gone by then; it closes only after the server has stopped.
func TestSIGTERMDrainsCreatesBeforeTheTrackerCloses(t *testing.T) {
	t.Parallel()
	const fast, slow = 12, 4
	const n = fast + slow
	fake := fakeapi.New(fakeapi.Options{Projects: []string{"p1"}})
	fake.SetFault(fakeapi.CreateJob, fakeapi.Fault{Latency: 1500 * time.Millisecond})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	statePath := filepath.Join(t.TempDir(), "agent.db")
	x := startAgentExporter(t, srv.URL, statePath)

	client := &http.Client{Timeout: 20 * time.Second}
	var (
		mu       sync.Mutex
		acked    []string
		answered []int
		wg       sync.WaitGroup
	)
	var slowWG sync.WaitGroup
	var bodies []*io.PipeWriter
	create := func(wg *sync.WaitGroup, i int, body io.Reader) {
		wg.Go(func() {
			resp, err := client.Post(x.Base+"/api/v2/agent/p1/job", "application/json", body)
			if err != nil {
				t.Errorf("create %d: %v", i, err)
				return
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			var j struct {
				ID string `json:"id"`
			}
			mu.Lock()
			defer mu.Unlock()
			answered = append(answered, resp.StatusCode)
			if resp.StatusCode/100 == 2 && json.Unmarshal(data, &j) == nil && j.ID != "" {
				acked = append(acked, j.ID)
			}
		})
	}
	for i := range slow {
		r, w := io.Pipe()
		bodies = append(bodies, w)
		create(&slowWG, i, r)
		if _, err := io.WriteString(w, `{"prompt":"sent slowly`); err != nil {
			t.Fatal(err)
		}
	}
	for i := range fast {
		create(&wg, i, strings.NewReader(fmt.Sprintf(`{"prompt":"in flight at SIGTERM %d #fake:pr:1h"}`, i)))
	}
	// Every fast create has reached the API, which holds its answer.
	blackbox.Eventually(t, 10*time.Second, "every fast create at the API", func() bool { return fake.Requests(fakeapi.CreateJob) == fast })
	if err := x.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	// The server has begun its drain (it logs so on the signal it shares
	// with everything a wrong program would stop at SIGTERM, the tracker
	// among them): the slow creates finish only now, on a condition and
	// not a guessed number of milliseconds.
	blackbox.Eventually(t, 0, "the server's drain begun", func() bool { return strings.Contains(x.Stderr.String(), `msg="shutting down"`) })
	for i, w := range bodies {
		if _, err := fmt.Fprintf(w, ` %d #fake:pr:1h"}`, i); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	slowWG.Wait()
	x.WaitExit(t)

	if len(acked) != n {
		t.Errorf("%d of %d creates in flight at SIGTERM acknowledged (answers %v), want all: the server drains before it stops", len(acked), n, answered)
	}
	if fake.JobCount() != n {
		t.Errorf("%d jobs upstream, want %d", fake.JobCount(), n)
	}
	out, err := testutil.CombinedOutput(exec.Command(exporterBin, "state", "check", statePath))
	if err != nil {
		t.Errorf("state check after SIGTERM: %v\n%s", err, out)
	}

	x = startAgentExporter(t, srv.URL, statePath)
	tracked := map[string]bool{}
	for _, v := range x.jobs(t) {
		tracked[v.ID] = true
	}
	for _, id := range acked {
		if !tracked[id] {
			t.Errorf("job %s was acknowledged before the exit but is not in the state file", id)
		}
	}
	if len(tracked) != len(acked) {
		t.Errorf("%d jobs tracked after the restart, %d acknowledged", len(tracked), len(acked))
	}
	x.Stop(t)
	if _, err := os.Stat(statePath); err != nil {
		t.Fatal(err)
	}
}
