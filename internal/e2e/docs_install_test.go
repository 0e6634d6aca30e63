package e2e

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestInstallNamesOnlyReleasedVersions: the README and docs/ download no
// release that was not cut, in the changelog and as a git tag (the README
// once gave a 0.1.0 URL while no tag existed); before the first release,
// they say how to install from source.
func TestInstallNamesOnlyReleasedVersions(t *testing.T) {
	t.Parallel()
	released := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+[^\]]*)\]`).FindAllStringSubmatch(readDoc(t, "CHANGELOG.md"), -1) {
		released[m[1]] = true
	}
	tags := map[string]bool{}
	if out, err := exec.Command("git", "tag", "--list", "v*").Output(); err == nil {
		for _, tag := range strings.Fields(string(out)) {
			tags[strings.TrimPrefix(tag, "v")] = true
		}
	}
	version := regexp.MustCompile(`(?:VERSION=|releases/download/v|mintlify_exporter-)(\d+\.\d+\.\d+)`)
	for _, page := range docPages(t) {
		for _, m := range version.FindAllStringSubmatch(readDoc(t, page), -1) {
			if !released[m[1]] || !tags[m[1]] {
				t.Errorf("%s: %q names version %s, which is not released (CHANGELOG.md section: %v, git tag v%s: %v)",
					page, m[0], m[1], released[m[1]], m[1], tags[m[1]])
			}
		}
	}
	if len(released) == 0 && !strings.Contains(readDoc(t, "README.md"), "go install github.com/mintlify-exporter/mintlify_exporter@latest") {
		t.Error("README.md: no release yet, and no install from source (go install ...@latest)")
	}
}

// TestReloadExamplesNameOneProcess: a reload example signals one exporter
// (its /-/reload endpoint, or one PID): kill -HUP "$(pidof ...)" fails, or
// reloads the wrong one, with two exporters on a host.
func TestReloadExamplesNameOneProcess(t *testing.T) {
	t.Parallel()
	for _, page := range docPages(t) {
		for i, line := range strings.Split(readDoc(t, page), "\n") {
			if strings.Contains(line, "pidof") || strings.Contains(line, "pkill") || strings.Contains(line, "killall") {
				t.Errorf("%s:%d: signals every exporter of the host: %s", page, i+1, strings.TrimSpace(line))
			}
		}
	}
}
