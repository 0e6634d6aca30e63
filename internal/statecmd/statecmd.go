// Package statecmd is the `mintlify_exporter state` command: check a state
// file of the agent job tracker, and salvage what is readable of a damaged
// one into a new file. Both read the file without bbolt, which panics on
// some damaged files, and never change it.
package statecmd

import (
	"errors"
	"fmt"
	"io"

	"github.com/alecthomas/kingpin/v2"

	"github.com/mintlify-exporter/mintlify_exporter/internal/tracker"
)

// Command is the state command and its subcommands.
type Command struct {
	check, salvage *kingpin.CmdClause
	checkFile      string
	src, dst       string
}

// Register adds `state check FILE` and `state salvage FILE NEWFILE` to app.
func Register(app *kingpin.Application) *Command {
	c := &Command{}
	state := app.Command("state", "Inspect or repair the agent state file (--agent.state-file).")
	c.check = state.Command("check", "Read a state file without changing it: what it holds and what is damaged. Exits 1 when it is damaged.")
	c.check.Arg("file", "State file to check.").Required().StringVar(&c.checkFile)
	c.salvage = state.Command("salvage", "Copy every readable job and create intent of a (damaged) state file into a new one, leaving the old one as it is.")
	c.salvage.Arg("file", "Damaged state file.").Required().StringVar(&c.src)
	c.salvage.Arg("newfile", "New state file to write (must not exist); start the exporter with --agent.state-file=NEWFILE.").Required().StringVar(&c.dst)
	return c
}

// Handles reports whether cmd, as kingpin's Parse returned it, is one of
// this command's.
func (c *Command) Handles(cmd string) bool {
	return cmd == c.check.FullCommand() || cmd == c.salvage.FullCommand()
}

// ErrDamaged is returned by check for a damaged file (after the report).
var ErrDamaged = errors.New("damaged")

// Run runs cmd, writing its report to out.
func (c *Command) Run(cmd string, out io.Writer) error {
	switch cmd {
	case c.check.FullCommand():
		rep, err := tracker.CheckState(c.checkFile)
		if err != nil {
			return err
		}
		fmt.Fprint(out, rep)
		if !rep.Healthy() {
			return fmt.Errorf("state file %s is %w: %s; copy what is readable with `mintlify_exporter state salvage %s NEWFILE`",
				c.checkFile, ErrDamaged, rep.Problem, c.checkFile)
		}
		return nil
	case c.salvage.FullCommand():
		rep, err := tracker.SalvageState(c.src, c.dst)
		if rep != nil {
			fmt.Fprint(out, rep)
		}
		if err != nil {
			return err
		}
		n := func(m map[string]int) int {
			s := 0
			for _, v := range m {
				s += v
			}
			return s
		}
		fmt.Fprintf(out, "salvaged %d values (%d from the tree, %d from loose pages) into %s; start the exporter with --agent.state-file=%s\n",
			n(rep.Entries)+n(rep.Loose), n(rep.Entries), n(rep.Loose), c.dst, c.dst)
		return nil
	}
	return fmt.Errorf("state: unknown command %q", cmd)
}
