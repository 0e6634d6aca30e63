package e2e

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// docPages are the README and every page of docs/, the documentation a
// reader follows, by their paths in the repository.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := fs.Glob(os.DirFS(repoRoot()), "docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 5 {
		t.Fatalf("docs/ holds %d pages", len(pages))
	}
	return append([]string{"README.md"}, pages...)
}

// readDoc reads the file at path in the repository.
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	// fence opens or closes a code block, also inside a quote.
	fence      = regexp.MustCompile("^(?:>\\s*)?\\s*```")
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	htmlSrc    = regexp.MustCompile(`<img[^>]*\ssrc="([^"]+)"`)
)

// prose is a Markdown file without its code blocks and inline code, where
// brackets and parentheses are not links.
func prose(md string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(md, "\n") {
		if fence.MatchString(line) {
			in = !in
			continue
		}
		if !in {
			b.WriteString(inlineCode.ReplaceAllString(line, "``") + "\n")
		}
	}
	return b.String()
}

// anchors are the fragments GitHub gives the headings of a Markdown file:
// lower case, punctuation dropped, spaces as hyphens, "-1", "-2", … for a
// repeated heading.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	in := false
	for _, line := range strings.Split(md, "\n") {
		if fence.MatchString(line) {
			in = !in
			continue
		}
		h, ok := strings.CutPrefix(line, "#")
		if in || !ok {
			continue
		}
		h = strings.TrimLeft(h, "#")
		if !strings.HasPrefix(h, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		for i := 1; out[a]; i++ {
			a = b.String() + "-" + strconv.Itoa(i)
		}
		out[a] = true
	}
	return out
}

// TestDocLinksResolve: every relative link and image of the README and of
// docs/ names a file or directory of the repository, and a link with a
// #fragment into a Markdown file names one of its headings.
func TestDocLinksResolve(t *testing.T) {
	t.Parallel()
	links := 0
	for _, page := range docPages(t) {
		text := prose(readDoc(t, page))
		var targets []string
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			targets = append(targets, m[1])
		}
		for _, m := range htmlSrc.FindAllStringSubmatch(text, -1) {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			file, frag, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
				if _, err := os.Stat(filepath.Join(repoRoot(), path)); err != nil {
					t.Errorf("%s: link %q: %v", page, target, err)
					continue
				}
			}
			if frag != "" {
				if !strings.HasSuffix(path, ".md") {
					t.Errorf("%s: link %q: a fragment into a file that is not Markdown", page, target)
				} else if !anchors(readDoc(t, path))[frag] {
					t.Errorf("%s: link %q: %s has no heading #%s", page, target, path, frag)
				}
			}
		}
	}
	if links < 50 {
		t.Errorf("found %d relative links; the patterns no longer match them", links)
	}
}

// TestDocPagesIntroduceAndLinkBack: every page of docs/ starts with its
// title and a paragraph, and links back to the README; the README links to
// every page.
func TestDocPagesIntroduceAndLinkBack(t *testing.T) {
	t.Parallel()
	pages := docPages(t)
	readme := prose(readDoc(t, pages[0]))
	for _, page := range pages[1:] {
		text := readDoc(t, page)
		lines := strings.Split(text, "\n")
		if len(lines) < 3 || !strings.HasPrefix(lines[0], "# ") || lines[1] != "" || lines[2] == "" || strings.HasPrefix(lines[2], "#") {
			t.Errorf("%s: want a title, then an introducing paragraph", page)
		}
		if !strings.Contains(text, "](../README.md)") {
			t.Errorf("%s: no link back to the README", page)
		}
		if !strings.Contains(readme, "]("+filepath.ToSlash(page)+")") {
			t.Errorf("README.md: no link to %s", page)
		}
	}
}

// TestRunbookPageListsEverySection: docs/runbook.md links to every section
// of alerts/RUNBOOK.md, where the alerts' runbook_url points.
func TestRunbookPageListsEverySection(t *testing.T) {
	t.Parallel()
	page := readDoc(t, "docs/runbook.md")
	for a := range anchors(readDoc(t, "alerts/RUNBOOK.md")) {
		if a == "runbook-mintlify_exporter-alerts" { // the title
			continue
		}
		if !strings.Contains(page, "(../alerts/RUNBOOK.md#"+a+")") {
			t.Errorf("docs/runbook.md does not link to alerts/RUNBOOK.md#%s", a)
		}
	}
}

// helpFlag is a flag's own line in kingpin's help: the application's
// flags indented by 6 (or "  -h, "), a command's by 4; its description's
// continuation lines are indented further.
var helpFlag = regexp.MustCompile(`(?m)^(?:  -\w, |      |    )--(?:\[no-\])?([a-z][a-z0-9.-]*)`)

// TestEveryFlagIsDocumented: every flag of every command, as --help-long
// lists them, is in docs/configuration.md.
func TestEveryFlagIsDocumented(t *testing.T) {
	t.Parallel()
	out, err := testutil.CombinedOutput(exec.Command(exporterBin, "--help-long"))
	if err != nil {
		t.Fatalf("--help-long: %v\n%s", err, out)
	}
	doc := readDoc(t, "docs/configuration.md")
	var flags []string
	for _, m := range helpFlag.FindAllStringSubmatch(string(out), -1) {
		if !slices.Contains(flags, m[1]) {
			flags = append(flags, m[1])
		}
	}
	for _, want := range []string{"web.listen-address", "config.file", "from", "backfill.label"} {
		if !slices.Contains(flags, want) {
			t.Fatalf("--help-long lists no --%s; the pattern no longer matches its flags:\n%s", want, out)
		}
	}
	for _, f := range flags {
		if !strings.Contains(doc, "`--"+f+"`") {
			t.Errorf("docs/configuration.md does not document --%s", f)
		}
	}
}

// metricName is a metric family name as the code writes it, in a string.
var metricName = regexp.MustCompile(`"(mintlify_[a-z0-9_]*[a-z0-9])"`)

// TestEveryMetricIsDocumented: every mintlify_ name the exporter's code
// writes (its metric families) is spelled out somewhere in the README or
// docs/, so a reader searching for a series finds it.
func TestEveryMetricIsDocumented(t *testing.T) {
	t.Parallel()
	var docs strings.Builder
	for _, p := range docPages(t) {
		docs.WriteString(readDoc(t, p))
	}
	seen := map[string]bool{}
	err := fs.WalkDir(os.DirFS(repoRoot()), ".", func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (path == "internal/e2e" || path == "internal/testutil" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".":
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		src, err := os.ReadFile(filepath.Join(repoRoot(), path))
		if err != nil {
			return err
		}
		for _, m := range metricName.FindAllStringSubmatch(string(src), -1) {
			seen[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !seen["mintlify_site_unique_visitors"] || !seen["mintlify_assistant_turns_by_category"] {
		t.Fatalf("the code's metric names were not found (%d names): the pattern no longer matches", len(seen))
	}
	for name := range seen {
		if !strings.Contains(docs.String(), name) {
			t.Errorf("%s is in the code but nowhere in the README or docs/", name)
		}
	}
}
