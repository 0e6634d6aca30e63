//go:build linux

package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/snapstore"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// maxStartRSS is issue 45's floor on the peak RSS of a start whatever the
// state directory holds.
const maxStartRSS = 150 << 20

// TestStateDirectoryHostileFiles (issue 45 items 1 and 2) walks two
// demands with the built exporter, kills it, puts something that is not a
// snapshot file in place of one demand's snapshot and of one encoded
// snapshot, and starts it again: /-/healthy answers, the start's peak RSS
// (VmHWM) stays under 150 MiB, a warning names each planted file, and the
// demand whose file was replaced is walked again and served while the
// other is served from its file. Before statedir.Open the FIFO blocked the
// start for ever (nothing listened, /-/healthy included) and the sparse
// file of 2 GiB was read whole (2.1 GB of RSS). The time to /-/healthy and
// the peak RSS are logged (BENCHMARKS.md), not judged by the wall clock.
func TestStateDirectoryHostileFiles(t *testing.T) {
	t.Parallel()
	for _, plant := range []struct {
		name string
		make func(path string) error
	}{
		{"FIFO", func(path string) error { return syscall.Mkfifo(path, 0o600) }},
		{"socket", func(path string) error { return syscall.Mknod(path, syscall.S_IFSOCK|0o600, 0) }},
		{"symlink to a device", func(path string) error { return os.Symlink("/dev/zero", path) }},
		{"directory", func(path string) error { return os.Mkdir(path, 0o700) }},
		// A valid file extended, as in the issue: truncate -s 2G.
		{"sparse file of 2 GiB", func(path string) error { return os.Truncate(path, 2<<30) }},
	} {
		t.Run(plant.name, func(t *testing.T) {
			t.Parallel()
			hostileStart(t, plant.name, plant.make)
		})
	}
}

func hostileStart(t *testing.T, name string, plant func(path string) error) {
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Paths: 20, APIKey: "mint_test"})
	// The API answers once the first start listens: walks that ended
	// before it would be encoded at Prime's level, which is not kept.
	listening := make(chan struct{})
	gated := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-listening:
			api.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(gated.Close)
	dir := t.TempDir()
	file := filepath.Join(dir, "mintlify.yml")
	blackbox.WriteFile(t, file, `organizations:
  - name: acme
    api_key_file: `+blackbox.KeyFile(t, dir, "key", "mint_test")+`
    analytics_budget: 100
projects:
  - id: docs
    windows: [7d]
    sources: {visitors: {}, searches: {}}
`)
	stateDir := filepath.Join(dir, "state")
	snaps, encoded := filepath.Join(stateDir, snapstore.DirName, "acme"), filepath.Join(stateDir, snapstore.EncodedDirName)
	args := blackbox.ConfigArgs(gated.URL, file, "--agent.state-file="+filepath.Join(stateDir, "agent.db"))

	x := startExporter(t, nil, args...)
	testutil.WaitHTTP(t, x.Base+"/-/healthy", testutil.Patience, nil)
	close(listening)
	var before status.Report
	blackbox.Eventually(t, 0, "both demands walked, their snapshots and encodings kept", func() bool {
		var err error
		before, err = blackbox.TryStatusReport(x.Base)
		return err == nil && len(before.Demands) == 2 && walkedAll(before) &&
			len(glob(t, snaps, "*.snap")) == 2 && len(glob(t, encoded, "*.enc")) == 2
	})
	x.Kill(t)
	var planted []string
	for _, f := range []string{glob(t, snaps, "*.snap")[0], glob(t, encoded, "*.enc")[0]} {
		if name != "sparse file of 2 GiB" {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := plant(f); err != nil {
			t.Fatal(err)
		}
		planted = append(planted, f)
	}
	sent := len(api.Analytics(""))

	start := time.Now()
	x = startExporter(t, nil, args...)
	var healthy time.Duration
	if !testutil.WaitUntil(testutil.Patience, func() bool {
		_, code, err := testutil.Get(t.Context(), x.Base+"/-/healthy")
		healthy = time.Since(start)
		return err == nil && code == http.StatusOK
	}) {
		t.Fatalf("with a %s in the state directory the exporter never answered /-/healthy:\n%s", name, x.Stderr)
	}
	blackbox.Eventually(t, 0, "the replaced demand walked again, the other served from its file", func() bool {
		r, err := blackbox.TryStatusReport(x.Base)
		return err == nil && len(r.Demands) == 2 && walkedAll(r) && len(api.Analytics("")) > sent
	})
	after, again := demandsByKey(blackbox.StatusReport(t, x.Base)), 0
	for k, d := range demandsByKey(before) {
		if !after[k].LastSuccessAt.Equal(d.LastSuccessAt) {
			again++
		}
	}
	if again != 1 {
		t.Errorf("%d demands walked again after the restart, want the one whose file was replaced", again)
	}
	blackbox.Eventually(t, 0, "both demands served on /metrics", func() bool {
		m, err := blackbox.TryScrape(t.Context(), x.Base)
		served := 0
		for k, v := range m {
			if strings.HasPrefix(k, "mintlify_analytics_refresh_success{") && v == 1 {
				served++
			}
		}
		return err == nil && served == 2
	})
	for _, f := range planted {
		if !strings.Contains(x.Stderr.String(), "level=warn") || !strings.Contains(x.Stderr.String(), f) {
			t.Errorf("no warning names %s:\n%s", f, x.Stderr)
		}
	}
	hwm := vmHWM(t, x.Cmd.Process.Pid)
	t.Logf("a %s in place of a snapshot and of an encoding: /-/healthy %s after the start, peak RSS (VmHWM) %.1f MiB",
		name, healthy.Round(time.Millisecond), float64(hwm)/(1<<20))
	if hwm > maxStartRSS {
		t.Errorf("peak RSS %d bytes, over the %d bytes of issue 45's floor", hwm, maxStartRSS)
	}
	x.Stop(t)
}

// walkedAll reports whether every demand of r has succeeded and none runs.
func walkedAll(r status.Report) bool {
	for _, d := range r.Demands {
		if d.Running || d.LastSuccessAt.IsZero() {
			return false
		}
	}
	return true
}

func glob(t *testing.T, dir, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// vmHWM is process pid's peak resident set size, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}
