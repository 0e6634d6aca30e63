//go:build scalebench

// Package scalebench measures the built exporter binary as a user runs it,
// at the scale the README promises (issue 32): 10 organizations × 10
// projects, every analytics source, windows 1d, 7d and 30d, 1,000 paths a
// project, against the in-repo fake API (in this process, without its
// quota) and a budget that lets every walk go at once. Once every demand
// is walked it reports, each against a floor measured in the same run (a
// bare HTTP server, another process, writing the same answer from one
// slice over the same loopback HTTP):
//
//   - RSS before any scrape, and the first gzip scrape;
//   - sequential OpenMetrics + gzip scrapes: time, and CPU per scrape of
//     the exporter's process (from /proc);
//   - 30 concurrent gzip scrapes: each one's time, RSS after;
//   - a plain-text scrape: time, RSS after and VmHWM;
//
// then it kills the exporter with SIGKILL and starts it again on its state
// directory (issue 37: the kept snapshots' size, the time to every series
// served again, the requests sent after the restart; -restart-only for that
// alone), and, for one project of 10,000 paths (every source, same
// windows), the whole binary's CPU per cached gzip scrape against the
// floor's.
//
//	make scale-bench   (scripts/scale-bench.sh: builds both, then runs this)
//
// It is a test binary (tag scalebench) rather than a command because
// nothing of it ships: TestScale prints Markdown, and the binary starts
// itself again as the floor server (-floor). Listens on 127.0.0.1 only.
// Timings depend on the machine and its load.
package scalebench

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// Accept as Prometheus sends it (OpenMetrics first).
const acceptOpenMetrics = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

var (
	binary      = flag.String("exporter", "./mintlify_exporter", "the exporter binary to measure")
	orgs        = flag.Int("orgs", 10, "organizations")
	perOrg      = flag.Int("projects", 10, "projects per organization")
	paths       = flag.Int("paths", 1000, "paths per project (the fake's size)")
	bigPaths    = flag.Int("big-paths", 10000, "paths of the one project of the CPU-per-scrape run (0: skip it)")
	budget      = flag.Int("budget", 100000, "the exporter's analytics_budget per organization (requests per hour); the fake has no quota")
	sequential  = flag.Int("sequential", 200, "sequential gzip scrapes (CPU is read in 10 ms ticks: enough of them to average over)")
	concurrent  = flag.Int("concurrent", 30, "concurrent gzip scrapes")
	cpuScrapes  = flag.Int("cpu-scrapes", 3000, "scrapes of the 10,000-path run over which CPU is averaged")
	bigOnly     = flag.Bool("big-only", false, "run only the one project of -big-paths paths (CPU per cached scrape)")
	restartOnly = flag.Bool("restart-only", false, "at scale, measure only the restart after kill -9 (no scrape comparisons, no big project)")
	walkTimeout = flag.Duration("walk-timeout", 15*time.Minute, "how long every demand may take to be walked")
	floorBody   = flag.String("floor", "", "internal: serve this file's bytes as a floor server")
	floorGzip   = flag.Bool("floor-gzip", false, "internal: the floor's body is gzipped")
)

func TestMain(m *testing.M) {
	flag.Parse()
	if *floorBody != "" {
		serveFloor(*floorBody, *floorGzip)
		return
	}
	os.Exit(m.Run())
}

func TestScale(t *testing.T) {
	if err := run(); err != nil {
		t.Fatal(err)
	}
}

// serveFloor is the floor: a bare handler writing one slice, on a port it
// prints to stdout.
func serveFloor(file string, gz bool) {
	body, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	ct := "application/openmetrics-text; version=1.0.0; charset=utf-8"
	if !gz {
		ct = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"
	}
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", ct)
		if gz {
			w.Header().Set("Content-Encoding", "gzip")
		}
		_, _ = w.Write(body)
	}))
}

func run() error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tmp, err := os.MkdirTemp("", "scalebench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	fake := fakeapi.New(fakeapi.Options{Paths: *paths, PathsByProject: map[string]int{"big": *bigPaths}})
	apiURL, wait, err := fake.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer func() { cancel(); _ = wait() }()

	client := newClient()
	if *bigOnly {
		return measureBigProject(client, tmp, apiURL)
	}
	if err := measureAtScale(client, tmp, apiURL, fake); err != nil {
		return err
	}
	if *bigPaths == 0 || *restartOnly {
		return nil
	}
	return measureBigProject(client, tmp, apiURL)
}

// measureAtScale prints the first section: the exporter of every
// organization's projects, walked, scraped in sequence, concurrently and
// as plain text, each beside a floor server of the same answer, then
// killed and restarted on its state directory. The exporter has stopped
// when it returns.
func measureAtScale(client *http.Client, tmp, apiURL string, fake *fakeapi.Server) error {
	var projects []string
	for o := range *orgs {
		for p := range *perOrg {
			projects = append(projects, fmt.Sprintf("o%dp%d", o, p))
		}
	}
	fmt.Printf("## %d organizations × %d projects, every source, windows 1d/7d/30d, %d paths a project\n\n", *orgs, *perOrg, *paths)
	fmt.Printf("exporter %s, analytics_budget %d per organization, fake API without quota (%s)\n\n", *binary, *budget, time.Now().UTC().Format(time.RFC3339))
	ex, err := startExporter(tmp, "scale", apiURL, *orgs, *perOrg, projects, *paths)
	if err != nil {
		return err
	}
	defer ex.stop()
	if err := ex.waitWalked(*walkTimeout); err != nil {
		return err
	}
	fmt.Printf("- every demand walked (%d) after %.1f s; RSS %s before any scrape\n", ex.demands, time.Since(ex.started).Seconds(), ex.mem())
	if !*restartOnly {
		if err := compareAll(client, ex, tmp); err != nil {
			return err
		}
	}
	re, err := measureRestart(client, ex, tmp, apiURL, fake, projects)
	if re != nil {
		re.stop()
	}
	return err
}

// compareAll prints the first scrape, then the sequential, concurrent and
// plain-text scrapes, each beside a floor server.
func compareAll(client *http.Client, ex *proc, tmp string) error {
	floor, err := firstScrape(client, ex, tmp)
	if err != nil {
		return err
	}
	defer floor.stop()
	fmt.Println()
	if err := compareScrapes(client, ex, floor); err != nil {
		return err
	}
	return comparePlainText(client, ex, floor, tmp)
}

// firstScrape times the first scrape after the walks, as Prometheus asks
// for it, and starts a floor server of its answer.
func firstScrape(client *http.Client, ex *proc, tmp string) (*proc, error) {
	t0 := time.Now()
	body, err := scrape(client, ex.url, acceptOpenMetrics, true)
	if err != nil {
		return nil, err
	}
	first := time.Since(t0)
	fmt.Printf("- first gzip scrape after the walks: **%.3f s** (%.2f MB gzipped, %d series)\n", first.Seconds(), float64(len(body))/1e6, countSeries(body))
	gzFile := filepath.Join(tmp, "answer.om.gz")
	if err := os.WriteFile(gzFile, body, 0o600); err != nil {
		return nil, err
	}
	return startFloor(gzFile, true)
}

// compareScrapes prints the exporter's and the floor's sequential and
// concurrent gzip scrapes.
func compareScrapes(client *http.Client, ex, floor *proc) error {
	et, ecpu, err := sequentialScrapes(client, ex, *sequential, true)
	if err != nil {
		return err
	}
	ft, fcpu, err := sequentialScrapes(client, floor, *sequential, true)
	if err != nil {
		return err
	}
	body, err := scrape(client, ex.url, acceptOpenMetrics, true)
	if err != nil {
		return err
	}
	fmt.Printf("- after the sequential scrapes: %.2f MB gzipped, %d series\n\n", float64(len(body))/1e6, countSeries(body))
	fmt.Printf("| measure | exporter | floor | ratio |\n|---|---|---|---|\n")
	fmt.Printf("| %d sequential OpenMetrics + gzip scrapes, median (min–max) | %s | %s | %.1f× |\n", *sequential, et, ft, et.median/ft.median)
	fmt.Printf("| CPU per sequential gzip scrape | %.2f ms | %.2f ms | %.1f× |\n", ecpu, fcpu, ecpu/fcpu)

	for _, p := range []*proc{ex, floor} {
		ts, err := concurrentScrapes(p, *concurrent)
		if err != nil {
			return err
		}
		p.note = fmt.Sprintf("%s; RSS after %s", ts, p.mem())
	}
	fmt.Printf("| %d concurrent gzip scrapes, each (median, max) | %s | %s | |\n", *concurrent, ex.note, floor.note)
	return nil
}

// comparePlainText prints a plain-text scrape of the exporter beside a
// floor server of the same answer, which replaces the gzip floor.
func comparePlainText(client *http.Client, ex, gzipFloor *proc, tmp string) error {
	plainFile := filepath.Join(tmp, "answer.txt")
	t0 := time.Now()
	plain, err := scrapeCount(client, ex.url, "text/plain;version=0.0.4", plainFile)
	if err != nil {
		return err
	}
	pt := time.Since(t0)
	gzipFloor.stop()
	plainFloor, err := startFloor(plainFile, false)
	if err != nil {
		return err
	}
	defer plainFloor.stop()
	t0 = time.Now()
	if _, err := scrapeCount(client, plainFloor.url, "text/plain;version=0.0.4", ""); err != nil {
		return err
	}
	fmt.Printf("| plain-text scrape (%.1f MB, %d series) | %.3f s; RSS after %s | %.3f s | |\n",
		float64(plain.bytes)/1e6, plain.series, pt.Seconds(), ex.mem(), time.Since(t0).Seconds())
	return nil
}

// measureBigProject prints the second section: the CPU of a cached gzip
// scrape of one project of --big-paths paths, beside a floor server.
func measureBigProject(client *http.Client, tmp, apiURL string) error {
	fmt.Printf("\n## One project of %d paths, every source, windows 1d/7d/30d: CPU per cached gzip scrape (%d scrapes)\n\n", *bigPaths, *cpuScrapes)
	big, err := startExporter(tmp, "big", apiURL, 1, 1, []string{"big"}, *bigPaths)
	if err != nil {
		return err
	}
	defer big.stop()
	if err := big.waitWalked(*walkTimeout); err != nil {
		return err
	}
	body, series, err := settledScrape(client, big)
	if err != nil {
		return err
	}
	gzFile := filepath.Join(tmp, "answer.om.gz")
	if err := os.WriteFile(gzFile, body, 0o600); err != nil {
		return err
	}
	bigFloor, err := startFloor(gzFile, true)
	if err != nil {
		return err
	}
	defer bigFloor.stop()
	idle := big.cpuIdle(5 * time.Second)
	bt, bcpu, err := sequentialScrapes(client, big, *cpuScrapes, true)
	if err != nil {
		return err
	}
	ft, fcpu, err := sequentialScrapes(client, bigFloor, *cpuScrapes, true)
	if err != nil {
		return err
	}
	fmt.Printf("| measure | exporter | floor | ratio |\n|---|---|---|---|\n")
	fmt.Printf("| OpenMetrics + gzip scrape (%.0f kB, %d series), median (min–max) | %s | %s | %.1f× |\n", float64(len(body))/1e3, series, bt, ft, bt.median/ft.median)
	fmt.Printf("| CPU per cached gzip scrape, whole process | **%.3f ms** | %.3f ms | **%.1f×** |\n", bcpu, fcpu, bcpu/fcpu)
	fmt.Printf("| the exporter's CPU when not scraped (plan, encoder), per the same time | %.3f ms | | |\n", idle*bt.total/float64(*cpuScrapes))
	return nil
}

// settledScrape is the answer the floor serves: once two scrapes a second
// apart hold the same number of series (the last walks' snapshots
// encoded), or the last of 30.
func settledScrape(client *http.Client, p *proc) (body []byte, series int, err error) {
	series = -1
	for range 30 {
		if body, err = scrape(client, p.url, acceptOpenMetrics, true); err != nil {
			return nil, 0, err
		}
		n := countSeries(body)
		if n == series {
			break
		}
		series = n
		time.Sleep(time.Second)
	}
	return body, series, nil
}

// proc is a measured server process.
type proc struct {
	cmd      *exec.Cmd
	url      string
	statusJS string
	started  time.Time
	demands  int
	note     string
	once     sync.Once
}

func (p *proc) stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
	})
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startExporter writes a configuration of orgs organizations of perOrg
// projects each (names from projects), every source, and starts the
// binary on it.
func startExporter(tmp, name, apiURL string, orgs, perOrg int, projects []string, maxPaths int) (*proc, error) {
	var cfg strings.Builder
	cfg.WriteString("organizations:\n")
	env := os.Environ()
	for o := range orgs {
		fmt.Fprintf(&cfg, "  - name: org%d\n    api_key_env: SCALEBENCH_KEY_%d\n    analytics_budget: %d\n", o, o, *budget)
		env = append(env, fmt.Sprintf("SCALEBENCH_KEY_%d=mint_scalebench%d", o, o))
	}
	cfg.WriteString("projects:\n")
	for i, p := range projects {
		fmt.Fprintf(&cfg, "  - id: %s\n    organization: org%d\n    windows: [1d, 7d, 30d]\n    paths: {max: %d}\n", p, i/perOrg, maxPaths)
		cfg.WriteString("    sources: {visitors: {}, views: {}, feedback: {}, feedback_items: {}, searches: {}, assistant: {}}\n")
	}
	dir := filepath.Join(tmp, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "mintlify.yml")
	if err := os.WriteFile(file, []byte(cfg.String()), 0o600); err != nil {
		return nil, err
	}
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(*binary, "--config.file="+file, "--mintlify.api-url="+apiURL, "--web.listen-address="+addr,
		"--log.level=warn", "--agent.state-file="+filepath.Join(dir, "agent.db"))
	cmd.Env = env
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &proc{cmd: cmd, url: "http://" + addr + "/metrics", statusJS: "http://" + addr + "/?format=json", started: time.Now()}, nil
}

func startFloor(file string, gz bool) (*proc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-floor", file, "-floor-gzip="+strconv.FormatBool(gz))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line := make([]byte, 64)
	n, err := out.Read(line)
	if err != nil {
		return nil, fmt.Errorf("floor server: %w", err)
	}
	return &proc{cmd: cmd, url: "http://" + strings.TrimSpace(string(line[:n])) + "/metrics"}, nil
}

// waitWalked waits until the status page lists every demand with a good
// walk (and their number stopped growing).
func (p *proc) waitWalked(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		resp, err := http.Get(p.statusJS)
		if err != nil {
			last = err.Error()
			continue
		}
		var rep struct {
			Demands []struct {
				Result string `json:"result"`
			} `json:"demands"`
		}
		err = json.NewDecoder(resp.Body).Decode(&rep)
		resp.Body.Close()
		if err != nil {
			last = err.Error()
			continue
		}
		ok := 0
		results := map[string]int{}
		for _, d := range rep.Demands {
			results[d.Result]++
			if d.Result == "ok" {
				ok++
			}
		}
		last = fmt.Sprintf("%d demands: %v", len(rep.Demands), results)
		if len(rep.Demands) > 0 && ok == len(rep.Demands) {
			p.demands = ok
			return nil
		}
	}
	return fmt.Errorf("not every demand walked within %s: %s", timeout, last)
}

// mem is the process's VmRSS and VmHWM.
func (p *proc) mem() string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return "?"
	}
	v := map[string]string{}
	for line := range strings.Lines(string(b)) {
		k, rest, ok := strings.Cut(line, ":")
		if ok && (k == "VmRSS" || k == "VmHWM") {
			kb, _ := strconv.Atoi(strings.Fields(rest)[0])
			v[k] = fmt.Sprintf("%.0f MiB", float64(kb)/1024)
		}
	}
	return fmt.Sprintf("%s (VmHWM %s)", v["VmRSS"], v["VmHWM"])
}

// cpu is the process's user and system CPU time so far.
func (p *proc) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64) // fields 14 and 15 of stat
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ 100
}

// cpuIdle is the process's CPU per second of wall time while not scraped.
func (p *proc) cpuIdle(d time.Duration) float64 {
	c0 := p.cpu()
	time.Sleep(d)
	return float64(p.cpu()-c0) / float64(d)
}

type timings struct{ median, min, max, total float64 } // seconds

func (t timings) String() string {
	return fmt.Sprintf("%s (%s–%s)", ms(t.median), ms(t.min), ms(t.max))
}

func ms(s float64) string {
	if s >= 1 {
		return fmt.Sprintf("%.2f s", s)
	}
	return fmt.Sprintf("%.1f ms", s*1000)
}

func summarize(ds []float64) timings {
	slices.Sort(ds)
	t := timings{median: ds[len(ds)/2], min: ds[0], max: ds[len(ds)-1]}
	for _, d := range ds {
		t.total += d
	}
	return t
}

func newClient() *http.Client {
	return &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64}}
}

// scrape returns the body as sent (gzipped when gz).
func scrape(c *http.Client, url, accept string, gz bool) ([]byte, error) {
	resp, err := get(c, url, accept, gz)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

func get(c *http.Client, url, accept string, gz bool) (*http.Response, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	if gz != (resp.Header.Get("Content-Encoding") == "gzip") {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: Content-Encoding %q", url, resp.Header.Get("Content-Encoding"))
	}
	return resp, nil
}

// countSeries counts the sample lines of a gzipped answer.
func countSeries(gz []byte) int {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return -1
	}
	n, err := countLines(zr)
	if err != nil {
		return -1
	}
	return n.series
}

type counted struct{ bytes, series int }

// scrapeCount reads a plain answer, into file when one is given.
func scrapeCount(c *http.Client, url, accept, file string) (counted, error) {
	resp, err := get(c, url, accept, false)
	if err != nil {
		return counted{}, err
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if file != "" {
		f, err := os.Create(file)
		if err != nil {
			return counted{}, err
		}
		defer f.Close()
		r = io.TeeReader(resp.Body, f)
	}
	return countLines(r)
}

func countLines(r io.Reader) (counted, error) {
	var n counted
	buf := make([]byte, 1<<20)
	atLineStart := true
	for {
		k, err := r.Read(buf)
		for _, b := range buf[:k] {
			if atLineStart && b != '#' {
				n.series++
			}
			atLineStart = b == '\n'
		}
		n.bytes += k
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// sequentialScrapes scrapes p n times in a row (after one to warm the
// connection) and returns the times and p's CPU per scrape in ms.
func sequentialScrapes(c *http.Client, p *proc, n int, gz bool) (timings, float64, error) {
	if _, err := scrape(c, p.url, acceptOpenMetrics, gz); err != nil {
		return timings{}, 0, err
	}
	ds := make([]float64, n)
	c0 := p.cpu()
	for i := range n {
		t0 := time.Now()
		resp, err := get(c, p.url, acceptOpenMetrics, gz)
		if err != nil {
			return timings{}, 0, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return timings{}, 0, err
		}
		ds[i] = time.Since(t0).Seconds()
	}
	cpu := float64(p.cpu()-c0) / float64(time.Millisecond) / float64(n)
	return summarize(ds), cpu, nil
}

// concurrentScrapes starts n gzip scrapes at once, each on its own
// connection, and returns their times.
func concurrentScrapes(p *proc, n int) (string, error) {
	ds := make([]float64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			c := newClient()
			<-start
			t0 := time.Now()
			resp, err := get(c, p.url, acceptOpenMetrics, true)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			ds[i], errs[i] = time.Since(t0).Seconds(), err
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	t := summarize(ds)
	return fmt.Sprintf("%s, %s", ms(t.median), ms(t.max)), nil
}
