package e2e

// The recipes of the README and docs/ as a reader pastes them: every
// configuration file through `config check`, every curl against the
// exporter `make run` starts.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// codeBlock is a fenced block of a page: its language and its text.
type codeBlock struct {
	page, lang, text string
	line             int // of the opening fence
}

// codeBlocks returns the fenced code blocks of the README and docs/.
func codeBlocks(t *testing.T) []codeBlock {
	t.Helper()
	var out []codeBlock
	for _, page := range docPages(t) {
		var cur *codeBlock
		for i, line := range strings.Split(readDoc(t, page), "\n") {
			switch {
			case cur == nil && strings.HasPrefix(line, "```"):
				cur = &codeBlock{page: page, lang: strings.TrimPrefix(line, "```"), line: i + 1}
			case cur != nil && strings.HasPrefix(line, "```"):
				out = append(out, *cur)
				cur = nil
			case cur != nil:
				cur.text += line + "\n"
			}
		}
	}
	return out
}

// keyFiles are the files a documented configuration reads its keys and
// secrets from (/etc/mintlify/acme.key), to be made in a test's directory.
var keyFiles = regexp.MustCompile(`/etc/mintlify/[\w.-]+`)

// adviceTo is "from 60 to about 59" in a notice: a number advised.
var adviceTo = regexp.MustCompile(`from (\d+) to about (\d+)`)

// TestConfigCheckOfTheDocumentedConfigurations: every configuration file
// of examples/ and every one the README and docs/ show whole (a block that
// starts with organizations:) passes `config check`, which
// gives them no notice: a documented example is one a reader may copy, so
// the plan meets what it asks (the README's 30d:6h got "raise the
// organization's analytics budget from 60 to about 59", issue 46), and no
// advice ever names a number lower than the one in force.
func TestConfigCheckOfTheDocumentedConfigurations(t *testing.T) {
	t.Parallel()
	type config struct{ name, text, dir string }
	var configs []config
	for _, name := range []string{"mintlify.yml", "mintlify-ha.yml"} {
		configs = append(configs, config{"examples/" + name, string(readFile(t, filepath.Join(examplesDir(), name))), examplesDir()})
	}
	for _, b := range codeBlocks(t) {
		body := strings.TrimLeft(regexp.MustCompile(`(?m)^#.*\n`).ReplaceAllString(b.text, ""), "\n")
		if b.lang == "yaml" && strings.HasPrefix(body, "organizations:") { // a projects: section alone is a part of one
			configs = append(configs, config{fmt.Sprintf("%s:%d", b.page, b.line), b.text, ""})
		}
	}
	if len(configs) < 4 {
		t.Fatalf("found %d configurations; the README and docs/ show more", len(configs))
	}
	for _, c := range configs {
		dir := t.TempDir()
		text := keyFiles.ReplaceAllStringFunc(c.text, func(p string) string {
			local := filepath.Join(dir, filepath.Base(p))
			if err := os.WriteFile(local, []byte("mint_test\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return local
		})
		file := filepath.Join(dir, "mintlify.yml")
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(exporterBin, "config", "check", "--config.file="+file)
		cmd.Dir = c.dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "MINTLIFY_API_KEY=mint_test"}
		for _, m := range regexp.MustCompile(`api_key_env:\s*(\w+)`).FindAllStringSubmatch(text, -1) {
			cmd.Env = append(cmd.Env, m[1]+"=mint_test")
		}
		out, err := testutil.CombinedOutput(cmd)
		if err != nil {
			t.Errorf("%s: config check: %v\n%s", c.name, err, out)
			continue
		}
		for _, m := range adviceTo.FindAllStringSubmatch(string(out), -1) {
			from, _ := strconv.Atoi(m[1])
			to, _ := strconv.Atoi(m[2])
			if to <= from {
				t.Errorf("%s: config check advises %q: a number no higher than the one in force", c.name, m[0])
			}
		}
		if strings.Contains(string(out), "notice:") {
			t.Errorf("%s: config check gives the documented configuration a notice:\n%s", c.name, out)
		}
	}
}
