// Command gen evaluates the monitoring mixin and writes the rule file and the dashboards:
//
//	go run ./mixin/gen                       # the shipped files (make mixin), from the repository root
//	go run ./mixin/gen -mixin my.jsonnet -out ./generated
//
// It writes <out>/alerts/mintlify.rules.yml and <out>/dashboards/<name>.json, and with -out at the
// repository root it removes dashboards/*.json that the mixin no longer defines.
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/mintlify-exporter/mintlify_exporter/mixin"
)

func main() {
	entry := flag.String("mixin", "mixin/mixin.libsonnet", "jsonnet file to evaluate: the mixin, or your file that imports mixin.libsonnet and overrides _config")
	out := flag.String("out", ".", "output directory: alerts/ and dashboards/ are written under it")
	var jpath multi
	flag.Var(&jpath, "J", "more jsonnet import directories (repeatable)")
	flag.Parse()
	if err := run(*entry, *out, jpath); err != nil {
		fmt.Fprintln(os.Stderr, "mixin:", err)
		os.Exit(1)
	}
}

type multi []string

func (m *multi) String() string     { return fmt.Sprint(*m) }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func run(entry, out string, jpath []string) error {
	files, err := mixin.Generate(mixin.Options{Entry: entry, JPath: jpath})
	if err != nil {
		return err
	}
	// Dashboards the mixin no longer defines.
	old, _ := filepath.Glob(filepath.Join(out, mixin.DashboardsDir, "*.json"))
	for _, path := range old {
		rel, err := filepath.Rel(out, path)
		if err == nil {
			if _, ok := files[filepath.ToSlash(rel)]; !ok {
				if err := os.Remove(path); err != nil {
					return err
				}
				fmt.Println("removed", path)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		path := filepath.Join(out, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", path)
	}
	return nil
}
