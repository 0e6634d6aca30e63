//go:build scalebench

package scalebench

import (
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/snapstore"
)

// measureRestart kills the walked exporter ex with SIGKILL and starts it
// again on the same state directory (issue 37): the size of the kept
// snapshots against the gzipped OpenMetrics exposition,
// the time from the start to /-/ready and to a scrape holding every series
// again, and the analytics requests the restarted exporter sends while it
// is watched (its plan has nothing due: none). It returns the restarted
// exporter, which the caller stops.
func measureRestart(client *http.Client, ex *proc, tmp, apiURL string, fake *fakeapi.Server, projects []string) (*proc, error) {
	body, err := scrape(client, ex.url, acceptOpenMetrics, true)
	if err != nil {
		return nil, err
	}
	gzBytes, series := len(body), countSeries(body)
	dir := filepath.Join(tmp, "scale", snapstore.DirName)
	encDir := filepath.Join(tmp, "scale", snapstore.EncodedDirName)
	// The encoder keeps each served snapshot's encoding a moment after it
	// served it (a file each, fsynced): the restart is measured once their
	// number has not changed for two seconds.
	for last, since := -1, time.Now(); time.Since(since) < 2*time.Second; time.Sleep(100 * time.Millisecond) {
		if _, n, err := dirSize(encDir); err == nil && n != last {
			last, since = n, time.Now()
		}
	}
	if err := ex.cmd.Process.Kill(); err != nil {
		return nil, err
	}
	_ = ex.cmd.Wait()
	ex.once.Do(func() {}) // stopped: its stop is a no-op
	snapSize, files, err := dirSize(dir)
	if err != nil {
		return nil, err
	}
	encSize, encFiles, err := dirSize(encDir)
	if err != nil {
		return nil, err
	}
	size := snapSize + encSize
	sent := fake.AnalyticsRequests()
	re, err := startExporter(tmp, "scale", apiURL, *orgs, *perOrg, projects, *paths)
	if err != nil {
		return nil, err
	}
	ready, err := re.waitReady(time.Minute)
	if err != nil {
		return re, err
	}
	// CPU, unlike wall time on a shared machine, does not depend on what
	// else runs: the restore's cost, whichever the load.
	readyCPU := re.cpu()
	var full time.Duration
	first := -1
	for full == 0 {
		body, err := scrape(client, re.url, acceptOpenMetrics, true)
		if err != nil {
			return re, err
		}
		n := countSeries(body)
		if first < 0 {
			first = n
		}
		if n >= series {
			full = time.Since(re.started)
		} else if time.Since(re.started) > 5*time.Minute {
			return re, fmt.Errorf("the restarted exporter serves %d of %d series after 5 minutes", n, series)
		}
	}
	const watch = 30 * time.Second
	time.Sleep(watch - min(time.Since(re.started), watch))
	fmt.Printf("\n## Restart after kill -9 on the state directory (issue 37)\n\n")
	fmt.Printf("| measure | value | floor | met |\n|---|---|---|---|\n")
	fmt.Printf("| state: snapshots (%d files, %.2f MB) + their encodings (%d files, %.2f MB) vs the gzipped OpenMetrics exposition | %.2f MB vs %.2f MB: %.2f× | ≤2× | %v |\n",
		files, float64(snapSize)/1e6, encFiles, float64(encSize)/1e6, float64(size)/1e6, float64(gzBytes)/1e6, float64(size)/float64(gzBytes), size <= 2*int64(gzBytes))
	fmt.Printf("| start → /-/ready | %.3f s (CPU %.2f s) | – | |\n", ready.Seconds(), readyCPU.Seconds())
	fmt.Printf("| start → a scrape with every series (%d; the first scrape after ready held %d) | %.3f s | ≤2 s | %v |\n",
		series, first, full.Seconds(), full <= 2*time.Second)
	fmt.Printf("| /-/ready → that scrape read whole | %.3f s | ≤1 s | %v |\n", (full - ready).Seconds(), full-ready <= time.Second)
	fmt.Printf("| analytics requests in the first %s after the start | %d | 0 (nothing was due) | %v |\n",
		watch, fake.AnalyticsRequests()-sent, fake.AnalyticsRequests() == sent)
	fmt.Printf("| RSS after the restore | %s | – | |\n", re.mem())
	return re, nil
}

// waitReady polls /-/ready and returns how long after the start it
// answered 200.
func (p *proc) waitReady(timeout time.Duration) (time.Duration, error) {
	ready := p.url[:len(p.url)-len("/metrics")] + "/-/ready"
	for time.Since(p.started) < timeout {
		resp, err := http.Get(ready)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(p.started), nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0, fmt.Errorf("not ready within %s", timeout)
}

// dirSize is the bytes and number of the regular files under dir.
func dirSize(dir string) (int64, int, error) {
	var size int64
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		size += info.Size()
		n++
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("kept snapshots: %w", err)
	}
	return size, n, nil
}
