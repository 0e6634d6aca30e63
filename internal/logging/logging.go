// Package logging builds the exporter's one logger: go-kit, leveled, logfmt
// or JSON, plus the two adapters other libraries need (slog for
// exporter-toolkit, a Println logger for promhttp), all writing through it.
// Every line leaves with the same first keys, ts, caller and level, in
// that order, whichever library logged it, and passes through the
// process's redactor, so that no secret (the API key, whole or altered)
// reaches the log.
package logging

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	slgk "github.com/tjhop/slog-gokit"

	"github.com/mintlify-exporter/mintlify_exporter/internal/secrets"
)

// Levels and Formats are the values --log.level and --log.format accept,
// the same as across the Prometheus ecosystem.
var (
	Levels  = []string{"debug", "info", "warn", "error"}
	Formats = []string{"logfmt", "json"}
)

// Loggers are the same output seen through the interfaces callers need.
type Loggers struct {
	// Logger is the go-kit logger, with ts and caller.
	Logger log.Logger
	// Slog feeds exporter-toolkit; its handler adds ts and caller itself.
	Slog *slog.Logger
	// Redactor masks secrets in every value logged through either: add
	// each secret to it as soon as it is known (apiclient.Config.Redactor
	// does so for API keys).
	Redactor *secrets.Redactor
}

// leadingKeys come first on every line, in this order.
var leadingKeys = []string{"ts", "caller", level.Key().(string)}

// New builds the loggers writing to w at the given level and format.
func New(w io.Writer, lvl, format string) (Loggers, error) {
	var out log.Logger
	switch format {
	case "logfmt":
		out = log.NewLogfmtLogger(log.NewSyncWriter(w))
	case "json":
		out = orderedJSONLogger{w: log.NewSyncWriter(w)}
	default:
		return Loggers{}, fmt.Errorf("unknown log format %q", format)
	}
	var opt level.Option
	var slogLevel *slog.LevelVar
	switch lvl {
	case "debug":
		opt, slogLevel = level.AllowDebug(), levelVar(slog.LevelDebug)
	case "info":
		opt, slogLevel = level.AllowInfo(), levelVar(slog.LevelInfo)
	case "warn":
		opt, slogLevel = level.AllowWarn(), levelVar(slog.LevelWarn)
	case "error":
		opt, slogLevel = level.AllowError(), levelVar(slog.LevelError)
	default:
		return Loggers{}, fmt.Errorf("unknown log level %q", lvl)
	}
	red := secrets.NewRedactor()
	base := level.NewFilter(redacting(red, leadingFirst(out)), opt)
	return Loggers{
		Logger:   log.With(base, "ts", log.DefaultTimestampUTC, "caller", log.DefaultCaller),
		Slog:     slog.New(slgk.NewGoKitHandler(tsKey(base), slogLevel)),
		Redactor: red,
	}, nil
}

// tsKey renames slog's "time" to go-kit's "ts", formatted as go-kit does
// (RFC 3339 in UTC), so that one output has one timestamp key whichever
// library logged the line.
func tsKey(next log.Logger) log.Logger {
	return log.LoggerFunc(func(keyvals ...any) error {
		for i := 0; i+1 < len(keyvals); i += 2 {
			if keyvals[i] != slog.TimeKey {
				continue
			}
			keyvals[i] = "ts"
			if t, ok := keyvals[i+1].(time.Time); ok {
				keyvals[i+1] = t.UTC().Format(time.RFC3339Nano)
			}
		}
		return next.Log(keyvals...)
	})
}

// leadingFirst moves the leadingKeys to the front, in their order: go-kit
// puts level (a prefix) before ts and caller, slog-gokit caller before ts.
func leadingFirst(next log.Logger) log.Logger {
	return log.LoggerFunc(func(keyvals ...any) error {
		out := make([]any, 0, len(keyvals)+1)
		for _, key := range leadingKeys {
			for i := 0; i+1 < len(keyvals); i += 2 {
				if keyvals[i] == key {
					out = append(out, keyvals[i], keyvals[i+1])
					break
				}
			}
		}
		if len(out) == 0 {
			return next.Log(keyvals...)
		}
		for i := 0; i < len(keyvals); i += 2 {
			if k, ok := keyvals[i].(string); ok && slices.Contains(leadingKeys, k) && i+1 < len(keyvals) {
				continue
			}
			out = append(out, keyvals[i:min(i+2, len(keyvals))]...)
		}
		return next.Log(out...)
	})
}

// redacting masks r's secrets in every text value: strings, errors and
// Stringers (an error's text may quote an API answer that echoed the key).
// Values without a secret keep their type.
func redacting(r *secrets.Redactor, next log.Logger) log.Logger {
	return log.LoggerFunc(func(keyvals ...any) error {
		for i := 1; i < len(keyvals); i += 2 {
			var text string
			switch v := keyvals[i].(type) {
			case string:
				text = v
			case error:
				text = v.Error()
			case fmt.Stringer:
				text = v.String()
			default:
				continue
			}
			if red := r.String(text); red != text {
				keyvals[i] = red
			}
		}
		return next.Log(keyvals...)
	})
}

func levelVar(l slog.Level) *slog.LevelVar {
	v := new(slog.LevelVar)
	v.Set(l)
	return v
}

// PromHTTPErrorLogger adapts a go-kit logger to promhttp's HandlerOpts.ErrorLog.
// go-kit's own stdlib adapter re-parses the text as key=value pairs and
// garbles gather errors, so this logs the whole line as one message.
type PromHTTPErrorLogger struct{ Logger log.Logger }

// Println implements promhttp.Logger. A scraper that hung up before the
// answer was written (broken pipe, connection reset) is logged at debug:
// it is the client's doing, nothing an operator can fix here.
func (l PromHTTPErrorLogger) Println(v ...any) {
	lvl := level.Error
	for _, a := range v {
		if err, ok := a.(error); ok && ClientGone(err) {
			lvl = level.Debug
		}
	}
	lvl(l.Logger).Log("msg", "error serving metrics", "err", strings.TrimSuffix(fmt.Sprintln(v...), "\n"))
}

// ClientGone reports whether err means the HTTP client closed the
// connection or cancelled the request.
func ClientGone(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "http2: stream closed")
}
