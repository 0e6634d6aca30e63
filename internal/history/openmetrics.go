package history

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// writeOpenMetrics assembles the OpenMetrics text from the state
// directory into cfg.Output or cfg.Stdout. It says what it wrote.
func writeOpenMetrics(cfg Config, jobs []job) (written string, err error) {
	out := cfg.Stdout
	var file *os.File
	if cfg.Output != "" && cfg.Output != "-" {
		file, err = os.CreateTemp(filepath.Dir(cfg.Output), ".backfill-*")
		if err != nil {
			return "", fmt.Errorf("--output: %w", err)
		}
		defer func() {
			if err != nil {
				file.Close()
				os.Remove(file.Name())
			}
		}()
		out = file
	}
	samples, err := encodeOpenMetrics(out, cfg, jobs)
	if err != nil {
		return "", err
	}
	if file == nil {
		return fmt.Sprintf("%s samples of OpenMetrics text written to standard output", group(samples)), nil
	}
	if err := file.Chmod(0o644); err != nil {
		return "", fmt.Errorf("--output: %w", err)
	}
	if err := file.Close(); err != nil {
		return "", fmt.Errorf("--output: %w", err)
	}
	if err := os.Rename(file.Name(), cfg.Output); err != nil {
		return "", fmt.Errorf("--output: %w", err)
	}
	return fmt.Sprintf("%s samples of OpenMetrics text in %s", group(samples), cfg.Output), nil
}

// encodeOpenMetrics writes the OpenMetrics text of jobs to out: each
// family with samples once, its samples day by day (so every series'
// timestamps ascend), then # EOF. It returns the number of samples.
func encodeOpenMetrics(out io.Writer, cfg Config, jobs []job) (samples int, err error) {
	w := bufio.NewWriterSize(out, 1<<20)
	for _, f := range families(jobs) {
		names := cfg.labelNames(f)
		// A family without samples (page series of a totals-only
		// backfill) is left out, its header too.
		headed := false
		err := cfg.eachSample(f, jobs, func(ms int64, v float64, lv []string) {
			if !headed {
				fmt.Fprintf(w, "# TYPE %s gauge\n# HELP %s %s\n", f.Name, f.Name, escapeHelp(f.Help))
				headed = true
			}
			samples++
			w.WriteString(f.Name)
			w.WriteByte('{')
			for i, name := range names {
				if i > 0 {
					w.WriteByte(',')
				}
				w.WriteString(name)
				w.WriteString(`="`)
				w.WriteString(escapeLabel(lv[i]))
				w.WriteByte('"')
			}
			w.WriteString("} ")
			w.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
			w.WriteByte(' ')
			w.WriteString(strconv.FormatInt(ms/1000, 10))
			w.WriteByte('\n')
		})
		if err != nil {
			return 0, err
		}
	}
	w.WriteString("# EOF\n")
	if err := w.Flush(); err != nil {
		return 0, fmt.Errorf("--output: %w", err)
	}
	return samples, nil
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
