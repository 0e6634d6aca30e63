// This file re-reads the configuration while the exporter runs, on
// SIGHUP or POST /-/reload, as blackbox_exporter does: a configuration
// that does not load changes nothing, and two gauges say how the last
// reload went.

package exporter

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
)

// Reloader runs one reload at a time.
type Reloader struct {
	apply  func() error
	logger log.Logger
	now    func() time.Time

	mu          sync.Mutex
	successful  prometheus.Gauge
	successTime prometheus.Gauge
	// state is the last reload's outcome, guarded by mu.
	state ReloadState
}

// ReloadState is how the last (re)load went.
type ReloadState struct {
	Successful            bool
	LastAt, LastSuccessAt time.Time
}

// State reads the last reload's outcome.
func (r *Reloader) State() ReloadState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// NewReloader returns a Reloader whose reloads call apply, which must read the
// configuration again and either make all of it current or change
// nothing. The start's own load counts as the first successful one.
func NewReloader(reg prometheus.Registerer, apply func() error, logger log.Logger, now func() time.Time) *Reloader {
	if now == nil {
		now = time.Now
	}
	r := &Reloader{apply: apply, logger: logger, now: now,
		successful: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mintlify_exporter_config_last_reload_successful",
			Help: "Whether the last configuration reload succeeded (1) or failed (0).",
		}),
		successTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mintlify_exporter_config_last_reload_success_timestamp_seconds",
			Help: "Unix time of the last successful configuration load.",
		}),
	}
	start := now()
	r.successful.Set(1)
	r.successTime.Set(float64(start.UnixNano()) / 1e9)
	r.state = ReloadState{Successful: true, LastAt: start, LastSuccessAt: start}
	if reg != nil {
		reg.MustRegister(r.successful, r.successTime)
	}
	return r
}

// Reload re-reads the configuration and logs the outcome.
func (r *Reloader) Reload(trigger string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state.LastAt = r.now()
	if err := r.apply(); err != nil {
		r.state.Successful = false
		r.successful.Set(0)
		level.Error(r.logger).Log("msg", "configuration reload failed; the previous configuration keeps running", "trigger", trigger, "err", err)
		return err
	}
	r.state.Successful, r.state.LastSuccessAt = true, r.state.LastAt
	r.successful.Set(1)
	r.successTime.Set(float64(r.state.LastAt.UnixNano()) / 1e9)
	level.Info(r.logger).Log("msg", "configuration reloaded", "trigger", trigger)
	return nil
}

// Handler serves POST /-/reload: 200 when the reload succeeded, 500 with
// the error (as JSON) when it did not, 405 for other methods.
func (r *Reloader) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if req.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			w.WriteHeader(http.StatusMethodNotAllowed)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "use POST to reload the configuration"})
			return
		}
		if err := r.Reload("http"); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"status": "reloaded"})
	})
}

// WatchSignals reloads on every SIGHUP until ctx ends.
func (r *Reloader) WatchSignals(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			_ = r.Reload("SIGHUP")
		}
	}
}
