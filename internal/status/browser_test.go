package status

import (
	"flag"
	"image/color"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// go test ./internal/status/ -run Browser -status.screenshots=../../docs
// writes the sample's screenshots for the README.
var screenshotDir = flag.String("status.screenshots", "", "also write the sample report's screenshots (status-page.png, status-page-phone.png) to this directory")

// screenshot runs scripts/status-screenshot.sh (docs/operations.md), and checks
// the picture: a PNG of the window's size, drawn with the page's styles (the
// red of a failed refresh's row is in it).
func screenshot(t *testing.T, bin, url, out string, width, height int) {
	t.Helper()
	img := testutil.Screenshot(t, "../../scripts/status-screenshot.sh", bin, url, out, width, height)
	badBackground := color.RGBA{0xfd, 0xe5, 0xe3, 0xff} // --bad-bg
	colors := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, a := img.At(x, y).RGBA()
			colors[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), uint8(a >> 8)}]++
		}
	}
	if len(colors) < 20 || colors[badBackground] < 500 {
		t.Errorf("%s: %d colours, %d pixels of a failed row's background: the page did not render with its styles", out, len(colors), colors[badBackground])
	}
}

// layoutProbe frames the status page at a phone's and a desktop's width and
// writes into its own DOM how wide each frame's page and tables are: the
// status page runs no script, so the probe measures it from outside.
const layoutProbe = `<!DOCTYPE html><html><body>
<iframe id="phone" src="/" width="390" height="844"></iframe>
<iframe id="desktop" src="/" width="1280" height="900"></iframe>
<script>
window.addEventListener("load", () => {
  for (const id of ["phone", "desktop"]) {
    const doc = document.getElementById(id).contentDocument, root = doc.documentElement;
    let tables = 0;
    for (const s of doc.querySelectorAll(".scroll")) tables = Math.max(tables, s.scrollWidth - s.clientWidth);
    const p = document.createElement("p");
    p.id = id + "-layout";
    p.textContent = id + " page=" + root.scrollWidth + " viewport=" + root.clientWidth + " table-overflow=" + tables +
      " cards=" + [...doc.querySelectorAll("tr.demand")].filter(tr => getComputedStyle(tr).display === "flex").length;
    document.body.append(p);
  }
});
</script></body></html>`

var layoutLine = regexp.MustCompile(`(phone|desktop) page=(\d+) viewport=(\d+) table-overflow=(\d+) cards=(\d+)`)

// TestBrowserRendersThePage renders the sample in Debian's chromium: the DOM
// it builds has every row, the page fits a phone's and a desktop's width
// (on a phone each refresh is a card), and the screenshot script
// draws it.
func TestBrowserRendersThePage(t *testing.T) {
	bin := testutil.Chromium(t)
	mux := http.NewServeMux()
	mux.Handle("/{$}", Handler(sampleSource, Options{}))
	mux.HandleFunc("/probe", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(layoutProbe))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close) // after the parallel subtests, unlike a defer

	t.Run("dom", func(t *testing.T) {
		t.Parallel()
		dom := testutil.RunChromium(t, bin, "--dump-dom", srv.URL+"/")
		if got := demandLevels(dom); !reflect.DeepEqual(got, wantDemandLevels) {
			t.Errorf("rendered demand rows:\n got %v\nwant %v", got, wantDemandLevels)
		}
		for _, want := range []string{
			`<strong>8 of 12 refreshes ok, 1 not run yet</strong>`,
			`data-organization="acme"`, `data-organization="globex"`,
			`<tr class="row" data-kind="projects" data-project="acme-docs">`, `<tr class="row" data-kind="deployments" data-project="acme-docs">`,
			`<code>job_7f3a91</code>`,
		} {
			if !strings.Contains(dom, want) {
				t.Errorf("rendered DOM lacks %s", want)
			}
		}
	})
	t.Run("layout", func(t *testing.T) {
		t.Parallel()
		dom := testutil.RunChromium(t, bin, "--window-size=1400,1000", "--dump-dom", srv.URL+"/probe")
		got := map[string][]string{}
		for _, m := range layoutLine.FindAllStringSubmatch(dom, -1) {
			got[m[1]] = m[2:]
		}
		if len(got) != 2 {
			t.Fatalf("layout probe reported %v:\n%s", got, dom)
		}
		for frame, m := range got {
			page, viewport, overflow, cards := m[0], m[1], m[2], m[3]
			if page != viewport || overflow != "0" {
				t.Errorf("%s: page %spx wide in a %spx viewport, tables %spx wider than their box: want no sideways scrolling", frame, page, viewport, overflow)
			}
			wantCards := map[string]string{"phone": strconv.Itoa(len(wantDemandLevels)), "desktop": "0"}[frame]
			if cards != wantCards {
				t.Errorf("%s: %s refreshes shown as cards, want %s", frame, cards, wantCards)
			}
		}
	})
	t.Run("phone screenshot", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		if *screenshotDir != "" {
			dir = *screenshotDir
		}
		screenshot(t, bin, srv.URL+"/", filepath.Join(dir, "status-page-phone.png"), 390, 844)
	})
	if *screenshotDir != "" {
		t.Run("desktop screenshot", func(t *testing.T) {
			t.Parallel()
			// Tall enough for the jobs and the deployments below the refreshes.
			screenshot(t, bin, srv.URL+"/", filepath.Join(*screenshotDir, "status-page.png"), 1280, 1900)
		})
	}
}
