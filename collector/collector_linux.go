package collector

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
)

// userHZ is the unit of the times in /proc/PID/stat, as procfs (and so
// client_golang) takes it: 100 on every Linux port Go supports.
const userHZ = 100

// collector reads, on each Collect, /proc/self/stat (CPU, virtual and
// resident memory), the size of /proc/self/fd (open files, Linux 6.2 and
// later; the entries counted before that) and getrlimit (the two maxima),
// /proc/self/stat into a buffer kept between scrapes. The start time is
// read once: it does not change.
type collector struct {
	start    float64
	startErr error
	pageSize float64

	mu  sync.Mutex // guards buf
	buf []byte
}

// New returns the process collector.
func NewProcessCollector() prometheus.Collector {
	c := &collector{pageSize: float64(os.Getpagesize()), buf: make([]byte, 0, 8<<10)}
	c.start, c.startErr = c.startTime()
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
}

// Collect sends what it could read, as client_golang's collector does (it
// reports no errors by default): a family it cannot read is left out.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, err := c.stat(); err == nil {
		ch <- prometheus.MustNewConstMetric(cpuDesc, prometheus.CounterValue, st.cpu)
		ch <- prometheus.MustNewConstMetric(vsizeDesc, prometheus.GaugeValue, st.vsize)
		ch <- prometheus.MustNewConstMetric(rssDesc, prometheus.GaugeValue, st.rss)
	}
	if c.startErr == nil {
		ch <- prometheus.MustNewConstMetric(startDesc, prometheus.GaugeValue, c.start)
	}
	if n, err := c.openFDs(); err == nil {
		ch <- prometheus.MustNewConstMetric(openFDsDesc, prometheus.GaugeValue, n)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		ch <- prometheus.MustNewConstMetric(maxFDsDesc, prometheus.GaugeValue, float64(lim.Cur))
	}
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &lim); err == nil {
		ch <- prometheus.MustNewConstMetric(maxVsizeDesc, prometheus.GaugeValue, float64(lim.Cur))
	}
}

// read reads a whole file of /proc into c.buf.
func (c *collector) read(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := c.buf[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF || (err == nil && n == 0) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	c.buf = b
	return b, nil
}

type procStat struct{ cpu, vsize, rss, startTicks float64 }

// stat reads /proc/self/stat (proc(5)): the fields after the command's
// name, which ends at the last ')'.
func (c *collector) stat() (procStat, error) {
	b, err := c.read("/proc/self/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b, c.pageSize)
}

func parseStat(b []byte, pageSize float64) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errors.New("process metrics: /proc/self/stat without a command name")
	}
	// Fields 14 (utime), 15 (stime), 22 (starttime), 23 (vsize), 24 (rss)
	// are the 12th, 13th, 20th, 21st and 22nd after the name.
	var f [22]uint64
	rest := b[i+1:]
	for n := range f {
		rest = bytes.TrimLeft(rest, " ")
		end := bytes.IndexAny(rest, " \n")
		if end < 0 {
			end = len(rest)
		}
		if n != 0 { // the state, a letter
			v, err := strconv.ParseInt(string(rest[:end]), 10, 64) // no copy: the conversion does not escape
			if err != nil {
				return procStat{}, fmt.Errorf("process metrics: /proc/self/stat field %d: %w", n+3, err)
			}
			f[n] = uint64(v)
		}
		rest = rest[end:]
	}
	return procStat{
		cpu:        float64(f[11]+f[12]) / userHZ,
		startTicks: float64(f[19]),
		vsize:      float64(f[20]),
		rss:        float64(f[21]) * pageSize,
	}, nil
}

// startTime is the boot time (/proc/stat's btime) plus the process' start
// after it, as procfs computes it.
func (c *collector) startTime() (float64, error) {
	st, err := c.stat()
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			boot, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("process metrics: /proc/stat btime: %w", err)
			}
			return float64(boot) + st.startTicks/userHZ, nil
		}
	}
	return 0, errors.New("process metrics: no btime in /proc/stat")
}

// openFDs counts the open files: the size of /proc/self/fd on Linux 6.2
// and later, its entries before.
func (c *collector) openFDs() (float64, error) {
	fi, err := os.Stat("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	if fi.Size() > 0 {
		return float64(fi.Size()), nil
	}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, err
	}
	return float64(len(names)), nil
}
