package server

import (
	"context"
	"log/slog"
)

// announcing passes the web toolkit's log records on and, after each of
// its "Listening on" records (a listener bound), calls bound with the
// listener's address: the metrics URL is logged only once its port is bound,
// so a port in use logs the bind error alone, not a URL that serves
// nothing before it.
type announcing struct {
	slog.Handler
	bound func(addr string)
}

func (h announcing) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Message == "Listening on" {
		addr := ""
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "address" {
				addr = a.Value.String()
			}
			return true
		})
		h.bound(addr)
	}
	return err
}

func (h announcing) WithAttrs(as []slog.Attr) slog.Handler {
	h.Handler = h.Handler.WithAttrs(as)
	return h
}

func (h announcing) WithGroup(name string) slog.Handler {
	h.Handler = h.Handler.WithGroup(name)
	return h
}
