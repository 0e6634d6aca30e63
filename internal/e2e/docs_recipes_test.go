package e2e

// The recipes of the README and docs/ as a reader pastes them: every
// configuration file through `config check`, every curl against the
// exporter `make run` starts.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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

// ciHost is the exporter's address in the recipes for a CI pipeline.
var ciHost = regexp.MustCompile(`https://exporter\.example(?:\.com)?(?::\d+)?`)

// curlStatus is what the test's curl adds to its standard error: the status
// of every request (000 when none came back) and its URL.
var curlStatus = regexp.MustCompile(`(?m)^curl-status (\d{3}) (\S+)$`)

// TestEveryCurlRunsOnMakeRun runs every code block of the README and docs/
// that calls curl, as a reader pastes it into a shell, against the exporter
// started with `make run`'s flags (the Makefile's RUN_FLAGS) on the sandbox:
// localhost:9871 becomes the test's port, nothing else changes. A block for
// a CI pipeline (its exporter at https://exporter.example...) runs with the
// pipeline's variables set (CI_PIPELINE_ID, CI_COMMIT_REF_NAME, PASSWORD,
// EXPORTER_PASSWORD) and that address replaced: the sandbox has no basic
// auth, so the credentials it sends change nothing. Of a console block the
// commands ($ lines) run. A block fails when a command fails (bash -e,
// pipefail) or a request answers 4xx, 5xx or nothing, unless the block says
// it "answers" that status (the examples of refusals). Curls in the prose
// (`curl ... http://vm:8428/...`) are not recipes of make run and are not run.
func TestEveryCurlRunsOnMakeRun(t *testing.T) {
	t.Parallel()
	realCurl := lookTool(t, "curl", "curl")
	lookTool(t, "jq", "jq")
	shim := t.TempDir()
	if err := os.WriteFile(filepath.Join(shim, "curl"), []byte("#!/bin/sh\nexec "+realCurl+
		" --write-out '%{stderr}curl-status %{http_code} %{url_effective}\\n' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	x := startExporter(t, nil, makeRunArgs(t)...)
	testutil.WaitHTTP(t, x.Base+"/-/ready", testutil.Slack(time.Minute), nil)
	port := x.Base[strings.LastIndex(x.Base, ":")+1:]
	blocks, curls := 0, 0
	for _, b := range codeBlocks(t) {
		if !strings.Contains(b.text, "curl ") || !slices.Contains([]string{"sh", "bash", "console", "shell"}, b.lang) {
			continue
		}
		blocks++
		script := b.text
		if b.lang == "console" {
			script = consoleCommands(b.text)
		}
		script = strings.ReplaceAll(script, "localhost:9871", "localhost:"+port)
		env := []string{"PATH=" + shim + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		if ciHost.MatchString(script) {
			script = ciHost.ReplaceAllString(script, "http://localhost:"+port)
			env = append(env, "CI_PIPELINE_ID=4242", "CI_COMMIT_REF_NAME=feature-x", "PASSWORD=pw", "EXPORTER_PASSWORD=pw")
		}
		where := fmt.Sprintf("%s:%d", b.page, b.line)
		ctx, cancel := context.WithTimeout(context.Background(), testutil.Slack(time.Minute))
		cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
		cmd.Dir, cmd.Env = t.TempDir(), env
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		began := time.Now()
		err := testutil.Run(cmd)
		cancel()
		t.Logf("%s: %s", where, time.Since(began).Round(time.Millisecond))
		if err != nil {
			t.Errorf("%s: %v\n%s\nstdout:\n%.2000s\nstderr:\n%.2000s", where, err, script, stdout.String(), stderr.String())
			continue
		}
		for _, m := range curlStatus.FindAllStringSubmatch(stderr.String(), -1) {
			curls++
			if (m[1] >= "400" || m[1] == "000") && !strings.Contains(b.text, "answers "+m[1]) {
				t.Errorf("%s: %s answered %s\n%s\nstdout:\n%.2000s", where, m[2], m[1], script, stdout.String())
			}
		}
	}
	if blocks < 8 || curls < blocks {
		t.Errorf("ran %d blocks with %d requests: the README and docs/ hold more recipes", blocks, curls)
	}
	t.Logf("%d blocks, %d requests", blocks, curls)
}

// consoleCommands is the commands of a console block: its "$ " lines and
// their continuations, without the output shown between them.
func consoleCommands(text string) string {
	var b strings.Builder
	cont := false
	for _, line := range strings.Split(text, "\n") {
		cmd, isCmd := strings.CutPrefix(line, "$ ")
		if !isCmd && !cont {
			continue
		}
		if !isCmd {
			cmd = line
		}
		b.WriteString(cmd + "\n")
		cont = strings.HasSuffix(strings.TrimSpace(cmd), "\\")
	}
	return b.String()
}
