// Package statecmd is the `mintlify_exporter state` command: check the
// state file of the operations the engine follows (of every kind), and
// salvage what is readable of a damaged one into a new file (both read the
// file without bbolt, which panics on some damaged files, and never change
// it); and, for replicas, decide what becomes of the operations' state
// that Redis lost (accept-empty, import) and copy it out of Redis
// (export).
package statecmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	// The kinds, whose records check and salvage read.
	_ "github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
)

// Command is the state command and its subcommands.
type Command struct {
	check, salvage         *kingpin.CmdClause
	accept, imp, export    *kingpin.CmdClause
	checkFile              string
	src, dst               string
	importFile, exportFile string
	// Cluster is the shared Redis of the replicas, for the commands that
	// NeedRedis (the caller sets it from --config.file or the
	// --cluster.* flags).
	Cluster config.Cluster
}

// Register adds the `state` commands to app: check and salvage of a state
// file, and accept-empty, import and export of the replicas' state in Redis.
func Register(app *kingpin.Application) *Command {
	c := &Command{}
	state := app.Command("state", "Inspect or repair the agent state file (--agent.state-file).")
	// One line each: the top-level --help lists every command (the runbook
	// says when to use which).
	c.check = state.Command("check", "Read a state file without changing it; exit 1 when it is damaged.")
	c.check.Arg("file", "State file to check.").Required().StringVar(&c.checkFile)
	c.salvage = state.Command("salvage", "Copy what is readable of a damaged state file into a new one; exit 1 when nothing is.")
	c.salvage.Arg("file", "Damaged state file.").Required().StringVar(&c.src)
	c.salvage.Arg("newfile", "New state file to write (must not exist); start the exporter with --agent.state-file=NEWFILE.").Required().StringVar(&c.dst)
	c.accept = state.Command("accept-empty", "Replicas: run the gateway again on the agent state Redis lost; its jobs are no longer followed.")
	c.imp = state.Command("import", "Replicas: copy a state file into the shared Redis after it lost the agent state.")
	c.imp.Arg("file", "State file to copy into Redis (from state export, or an --agent.state-file).").Required().StringVar(&c.importFile)
	c.export = state.Command("export", "Replicas: copy the agent state in the shared Redis into a new state file.")
	c.export.Arg("newfile", "State file to write (must not exist).").Required().StringVar(&c.exportFile)
	return c
}

// Handles reports whether cmd, as kingpin's Parse returned it, is one of
// this command's.
func (c *Command) Handles(cmd string) bool {
	return cmd == c.check.FullCommand() || cmd == c.salvage.FullCommand() || c.NeedsRedis(cmd)
}

// NeedsRedis reports whether cmd works on the shared Redis (Cluster).
func (c *Command) NeedsRedis(cmd string) bool {
	return cmd == c.accept.FullCommand() || cmd == c.imp.FullCommand() || cmd == c.export.FullCommand()
}

// ErrDamaged is returned by check for a damaged file (after the report).
var ErrDamaged = errors.New("damaged")

// Run runs cmd, writing its report to out. The error it returns does not
// repeat the report.
func (c *Command) Run(cmd string, out io.Writer) error {
	switch cmd {
	case c.check.FullCommand():
		rep, err := engine.CheckState(c.checkFile)
		if err != nil {
			return err
		}
		fmt.Fprint(out, rep)
		if !rep.Healthy() {
			return fmt.Errorf("state file %s is %w (%s); copy what is readable with `mintlify_exporter state salvage %s NEWFILE`",
				c.checkFile, ErrDamaged, rep.Problem, c.checkFile)
		}
		return nil
	case c.salvage.FullCommand():
		rep, err := engine.SalvageState(c.src, c.dst)
		if rep != nil {
			fmt.Fprint(out, rep)
		}
		if err != nil {
			return err
		}
		c.summary(out, rep)
		return nil
	}
	if c.NeedsRedis(cmd) {
		return c.runRedis(cmd, out)
	}
	return fmt.Errorf("state: unknown command %q", cmd)
}

// runRedis runs accept-empty, import or export against the shared Redis.
func (c *Command) runRedis(cmd string, out io.Writer) error {
	if !c.Cluster.Enabled() {
		return fmt.Errorf("%s: no shared Redis: give --config.file with a cluster: section, or --cluster.redis-address", cmd)
	}
	client, err := sharedredis.New(c.Cluster, nil, nil)
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	schema, upgrades, buckets := engine.Layout()
	opts := store.Options{Schema: schema, Upgrades: upgrades, Buckets: buckets, LockTimeout: time.Second}
	switch cmd {
	case c.accept.FullCommand():
		accepted, err := store.AcceptLostState(ctx, client)
		if err != nil {
			return err
		}
		if !accepted {
			fmt.Fprintln(out, "the agent state in Redis is not marked lost: nothing to accept")
			return nil
		}
		fmt.Fprintln(out, "accepted the agent state in Redis as it is: the replicas run the gateway on it again within a lease round")
		return nil
	case c.imp.FullCommand():
		if st, err := os.Stat(c.importFile); err != nil {
			return fmt.Errorf("import: %w", err)
		} else if !st.Mode().IsRegular() {
			return fmt.Errorf("import: %s is not a regular file", c.importFile)
		}
		counts, err := store.ImportState(ctx, client, c.importFile, opts)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		fmt.Fprintf(out, "imported %s from %s into the agent state in Redis: the replicas run the gateway on it within a lease round\n",
			engine.DescribeCounts(counts), c.importFile)
		return nil
	default:
		counts, err := store.ExportState(ctx, client, c.exportFile, opts)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		fmt.Fprintf(out, "exported %s from the agent state in Redis into %s\n", engine.DescribeCounts(counts), c.exportFile)
		return nil
	}
}

// summary says what salvage wrote and what it could not keep.
func (c *Command) summary(out io.Writer, rep *store.Report) {
	all := maps.Clone(rep.Entries)
	for _, m := range []map[string]int{rep.Loose, rep.Rebuilt} {
		for b, n := range m {
			all[b] += n
		}
	}
	sum := func(m map[string]int) (n int) {
		for _, v := range m {
			n += v
		}
		return n
	}
	fmt.Fprintf(out, "salvaged %s into %s (%d from the file's tree, %d from loose pages, %d rebuilt from their keys); "+
		"start the exporter with --agent.state-file=%s\n",
		engine.DescribeCounts(all), c.dst, sum(rep.Entries), sum(rep.Loose), sum(rep.Rebuilt), c.dst)
	if n := sum(rep.Rebuilt); n > 0 {
		fmt.Fprintf(out, "warning: %d unreadable value(s) rebuilt from their keys alone: their idempotency keys are lost, so a retry with one "+
			"would create a second job; rebuilt jobs show \"rebuilt\": true and count in mintlify_agent_state_unreadable_records; "+
			"rebuilt create intents are listed under unknown-creates\n", n)
	}
	if n := rep.Unreadable - sum(rep.Rebuilt); n > 0 {
		fmt.Fprintf(out, "warning: %d unreadable value(s) could not be rebuilt and were left out\n", n)
	}
	if len(rep.Damaged) > 0 {
		fmt.Fprintln(out, "warning: the file was damaged: jobs written only to its damaged parts are not in the new file, and loose pages may hold older versions")
	}
}
