// Package server is the exporter's HTTP server: its routes (the status
// page at /), the health and readiness probes, the basic auth of
// --web.config.file in front of them all (AuthFront) and a graceful
// shutdown. It knows handlers, not what they serve.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
)

// ShutdownTimeout bounds how long requests in flight may finish after
// SIGTERM.
const ShutdownTimeout = 15 * time.Second

// Flags are the server's settings from the command line.
type Flags struct {
	Web           *web.FlagConfig
	TelemetryPath string
	// MaxRequests bounds the scrapes served at once (0: no bound).
	MaxRequests int
	// AllowedHosts are the host names the agent job gateway answers
	// without basic auth, beside localhost and IP addresses.
	AllowedHosts []string
}

// MaxHeaderBytes bounds a request's headers (Go's default is 1 MiB; a
// larger request gets 431). The gateway takes requests from CI pipelines
// and browsers, the other routes from Prometheus and probes: none sends more
// than a few KiB (basic auth, an Idempotency-Key, cookies of a status page),
// so every route has the bound, not only the gateway's, which the server
// cannot tell apart before the headers are read.
const MaxHeaderBytes = 64 << 10

// DefaultPort is the exporter's default listen port (see the README).
const DefaultPort = ":9871"

// RegisterFlags adds the server's flags to cmd; they are set in the
// returned Flags when cmd is parsed.
func RegisterFlags(cmd config.Flagger) *Flags {
	f := &Flags{Web: kingpinflag.AddFlags(cmd, DefaultPort), TelemetryPath: "/metrics", MaxRequests: 40}
	cmd.Flag("web.telemetry-path", "Path under which to expose metrics.").Default(f.TelemetryPath).StringVar(&f.TelemetryPath)
	config.IntVar(cmd, "web.max-requests", "Maximum number of parallel scrape requests. 0 disables the limit.", &f.MaxRequests)
	cmd.Flag("web.agent-api-allowed-host", "Host name the agent job gateway answers without basic auth, beside localhost and IP addresses (repeatable); other names get 403, so that a page whose name is pointed at this address (DNS rebinding) cannot use it. Not needed with basic auth.").
		PlaceHolder("NAME").StringsVar(&f.AllowedHosts)
	return f
}

// Validate names the flag of the first invalid setting.
func (f *Flags) Validate() error {
	if err := CheckTelemetryPath(f.TelemetryPath); err != nil {
		return fmt.Errorf("--web.telemetry-path: %w", err)
	}
	for _, h := range f.AllowedHosts {
		if h == "" || strings.ContainsAny(h, ":/ []") {
			return fmt.Errorf("--web.agent-api-allowed-host: want a host name without port or scheme, got %q", h)
		}
	}
	if f.MaxRequests < 0 {
		return fmt.Errorf("--web.max-requests: must be 0 or greater, got %d", f.MaxRequests)
	}
	return nil
}

// Routes are the handlers the server serves.
type Routes struct {
	Metrics http.Handler
	// API is the agent job gateway (or what answers when it is off).
	API http.Handler
	// Reload serves /-/reload.
	Reload http.Handler
	// Status is the status page, served at /.
	Status http.Handler
	// Front checks basic auth before every route (and hands TLS to
	// exporter-toolkit).
	Front *AuthFront
	// Replica, when set (replicas share the gateway), authenticates a
	// request under /api/ that another replica forwarded: it answers the
	// request to serve in place of the front's check (nil when r is not
	// forwarded: the front checks it), or an error to refuse it with 401.
	Replica func(r *http.Request) (*http.Request, error)
}

// Server serves the routes until its context ends.
type Server struct {
	flags        Flags
	srv          *http.Server
	shuttingDown atomic.Bool
	logger       log.Logger
	slog         *slog.Logger
	front        *AuthFront
}

// New builds the server's mux.
func New(flags Flags, r Routes, logger log.Logger, slogger *slog.Logger) (*Server, error) {
	if err := CheckTelemetryPath(flags.TelemetryPath); err != nil {
		return nil, fmt.Errorf("--web.telemetry-path: %w", err)
	}
	s := &Server{flags: flags, logger: logger, slog: slogger, front: r.Front}
	mux := http.NewServeMux()
	mux.Handle("/api/", r.API)
	mux.Handle(flags.TelemetryPath, r.Metrics)
	mux.Handle("/-/reload", r.Reload)
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "Healthy\n")
	})
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if s.shuttingDown.Load() {
			http.Error(w, "Shutting down", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "Ready\n")
	})
	mux.Handle("/{$}", r.Status)
	mux.HandleFunc("/", http.NotFound)
	handler := r.Front.Wrap(hostGuard(mux, r.Front, flags.AllowedHosts))
	if r.Replica != nil {
		handler = replicaOrFront(r.Replica, mux, handler, logger)
	}
	s.srv = &http.Server{
		Handler:           sameOrigin(handler, logger),
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    MaxHeaderBytes,
		// Bound everything so slow clients cannot pin goroutines.
		ReadTimeout:  30 * time.Second,
		WriteTimeout: 2 * time.Minute,
		IdleTimeout:  2 * time.Minute,
	}
	return s, nil
}

// Run serves until ctx ends, then stops taking requests, lets those in
// flight finish (ShutdownTimeout at most) and returns: what the handlers
// use (the job tracker) may close only after Run returned.
func (s *Server) Run(ctx context.Context) error {
	addrs := *s.flags.Web.WebListenAddresses
	logger := slog.New(announcing{Handler: s.slog.Handler(), bound: func(addr string) {
		_, port, _ := net.SplitHostPort(addr)
		for _, a := range addrs {
			if _, p, err := net.SplitHostPort(a); err == nil && p == port {
				addr = a // as configured: ":9871" reads as localhost
				break
			}
		}
		level.Info(s.logger).Log("msg", "serving metrics", "url", URL(addr, s.flags.TelemetryPath))
	}})
	errc := make(chan error, 1)
	go func() { errc <- s.front.ListenAndServe(s.srv, s.flags.Web, logger) }()
	select {
	case err := <-errc:
		return listenError(err, addrs)
	case <-ctx.Done():
	}
	level.Info(s.logger).Log("msg", "shutting down")
	s.shuttingDown.Store(true)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	if err := s.srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutting down web server: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("web server: %w", err)
	}
	return nil
}

// listenError names the flag to change when the web server could not
// listen: "address already in use" alone does not say which setting moves
// the port (make run's is RUN_ADDR, which sets this flag).
func listenError(err error, addrs []string) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("--web.listen-address=%s: the address is in use by another process: stop it, or give another address (make run: RUN_ADDR=localhost:PORT): %w",
			strings.Join(addrs, ","), err)
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "listen" {
		return fmt.Errorf("--web.listen-address=%s: cannot listen: %w", strings.Join(addrs, ","), err)
	}
	return fmt.Errorf("web server: %w", err)
}

// URL turns a listen address into a URL a person can open.
func URL(addr, path string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr + path
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + path
}

// replicaOrFront serves a request under /api/ that another replica
// forwarded, once authenticated by replica, without the front's basic auth
// (the forwarding replica checked it and sent no credentials on); every
// other request goes through front.
func replicaOrFront(replica func(*http.Request) (*http.Request, error), mux, front http.Handler, logger log.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") {
			out, err := replica(r)
			if err != nil {
				level.Warn(logger).Log("msg", "refused a request that claims to come from another replica", "remote", r.RemoteAddr, "err", err)
				writeError(w, http.StatusUnauthorized, err.Error())
				return
			}
			if out != nil {
				mux.ServeHTTP(w, out)
				return
			}
		}
		front.ServeHTTP(w, r)
	})
}
