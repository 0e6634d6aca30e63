// This file is the exporter's process collector: the families
// of client_golang's (process_cpu_seconds_total, process_open_fds,
// process_max_fds, process_virtual_memory_bytes,
// process_virtual_memory_max_bytes, process_resident_memory_bytes,
// process_start_time_seconds), same names, help and meaning, read afresh
// on every scrape, but cheaply: on Linux client_golang's collector was most
// of the CPU of a cached scrape (BENCHMARKS.md, issue 32), reading
// /proc/stat (for the boot time behind a start time that never changes),
// parsing /proc/self/limits with regular expressions (getrlimit answers the
// same) and /proc/self/net/netstat.
//
// process_network_receive_bytes_total and
// process_network_transmit_bytes_total are left out: they are the network
// namespace's IP counters, not the process's, and the kernel spends about
// 90 µs of CPU writing /proc/self/net/netstat, more than the rest of a
// cached scrape (docs/metrics.md says where to get them). Elsewhere than
// on Linux it is client_golang's collector, with them.

package collector

import "github.com/prometheus/client_golang/prometheus"

// The families, as client_golang's process collector names and describes
// them (a test compares the two).
var (
	cpuDesc      = prometheus.NewDesc("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", nil, nil)
	openFDsDesc  = prometheus.NewDesc("process_open_fds", "Number of open file descriptors.", nil, nil)
	maxFDsDesc   = prometheus.NewDesc("process_max_fds", "Maximum number of open file descriptors.", nil, nil)
	vsizeDesc    = prometheus.NewDesc("process_virtual_memory_bytes", "Virtual memory size in bytes.", nil, nil)
	maxVsizeDesc = prometheus.NewDesc("process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.", nil, nil)
	rssDesc      = prometheus.NewDesc("process_resident_memory_bytes", "Resident memory size in bytes.", nil, nil)
	startDesc    = prometheus.NewDesc("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", nil, nil)
	descs        = []*prometheus.Desc{cpuDesc, openFDsDesc, maxFDsDesc, vsizeDesc, maxVsizeDesc, rssDesc, startDesc}
)
