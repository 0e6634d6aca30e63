package server

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// Guards that browsers need: a page on another site must not change
// anything here (POST /-/reload, the gateway's creates and follow-ups),
// even with the basic-auth credentials a browser keeps, and, without basic
// auth, a page whose host name an attacker points at this address (DNS
// rebinding) must not reach the gateway.

// writeError answers status with a JSON error, as every error of the
// exporter's API.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// sameOrigin refuses, with 403, every request of a state-changing method
// (anything but GET, HEAD and OPTIONS) that a browser marks as sent from
// another origin: Sec-Fetch-Site other than same-origin or none, or,
// without it, an Origin that is not the request's host. Requests without
// either header (curl, Prometheus, another replica) pass.
func sameOrigin(next http.Handler, logger log.Logger) http.Handler {
	p := http.NewCrossOriginProtection()
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		level.Warn(logger).Log("msg", "refused a cross-site request", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
		writeError(w, http.StatusForbidden, "cross-site request refused: "+r.Method+" is accepted from the exporter's own origin only "+
			"(Sec-Fetch-Site or Origin names another site)")
	}))
	return p.Handler(next)
}

// hostGuard refuses, with 403, a request to the agent job gateway (/api/)
// whose Host is neither a loopback name, an IP address nor one of allowed,
// while basic auth is off (front unprotected): the page of a name that an
// attacker resolves to this address sends that name.
func hostGuard(next http.Handler, front *AuthFront, allowed []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") && !front.Protected() && !hostAllowed(r.Host, allowed) {
			writeError(w, http.StatusForbidden, fmt.Sprintf("host name %.100q is not accepted by the agent job gateway without basic auth: "+
				"use localhost or an IP address, add the name with --web.agent-api-allowed-host, or turn basic auth on (--web.config.file)", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether host (a Host header, with or without a
// port) is localhost (or a name under .localhost), an IP address, or one
// of allowed. An IP address cannot be rebound: a page sends it only when
// its own origin is that address.
func hostAllowed(host string, allowed []string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" {
		return false
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || net.ParseIP(host) != nil {
		return true
	}
	return slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(strings.TrimSuffix(a, "."), host) })
}
