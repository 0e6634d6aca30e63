// Package logging builds the exporter's one logger: go-kit, leveled, logfmt
// or JSON, plus the two adapters other libraries need (slog for
// exporter-toolkit, a Println logger for promhttp), all writing through it.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	slgk "github.com/tjhop/slog-gokit"
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
}

// New builds the loggers writing to w at the given level and format.
func New(w io.Writer, lvl, format string) (Loggers, error) {
	var base log.Logger
	switch format {
	case "logfmt":
		base = log.NewLogfmtLogger(log.NewSyncWriter(w))
	case "json":
		base = log.NewJSONLogger(log.NewSyncWriter(w))
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
	base = level.NewFilter(base, opt)
	return Loggers{
		Logger: log.With(base, "ts", log.DefaultTimestampUTC, "caller", log.DefaultCaller),
		Slog:   slog.New(slgk.NewGoKitHandler(tsKey(base), slogLevel)),
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

func levelVar(l slog.Level) *slog.LevelVar {
	v := new(slog.LevelVar)
	v.Set(l)
	return v
}

// PromHTTPErrorLogger adapts a go-kit logger to promhttp's HandlerOpts.ErrorLog.
// go-kit's own stdlib adapter re-parses the text as key=value pairs and
// garbles gather errors, so this logs the whole line as one message.
type PromHTTPErrorLogger struct{ Logger log.Logger }

// Println implements promhttp.Logger.
func (l PromHTTPErrorLogger) Println(v ...any) {
	level.Error(l.Logger).Log("msg", "error serving metrics", "err", strings.TrimSuffix(fmt.Sprintln(v...), "\n"))
}
