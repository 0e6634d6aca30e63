package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// expiry is organization org's mintlify_api_key_expiry_timestamp_seconds
// series, as scrape names it.
func expiry(org string) string {
	return "mintlify_api_key_expiry_timestamp_seconds{organization=" + org + "}"
}

// TestKeyExpiryIsExportedAndReloaded runs the built exporter on a file in
// which one organization's key has an expiry date and the other none: the
// first has its gauge on /metrics, the second none; a reload that changes
// the date (a rotated key) changes the gauge, a reload with a bad date is
// refused naming the key and its line and keeps the gauge, and a reload
// that removes the date removes the series.
func TestKeyExpiryIsExportedAndReloaded(t *testing.T) {
	t.Parallel()
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Paths: 20, Organizations: []fakeapi.Organization{
		{Key: "mint_acme", Projects: []string{"acme-docs"}}, {Key: "mint_globex", Projects: []string{"globex-docs"}},
	}})
	dir := t.TempDir()
	file := dir + "/mintlify.yml"
	write := func(acmeExpires string) {
		blackbox.WriteFile(t, file, `
organizations:
  - name: acme
    api_key_file: `+blackbox.KeyFile(t, dir, "acme.key", "mint_acme")+acmeExpires+`
  - name: globex
    api_key_env: GLOBEX_KEY
projects:
  - {id: acme-docs, organization: acme, windows: [7d], timezone: `+blackbox.NoonZone()+`, sources: [visitors]}
  - {id: globex-docs, organization: globex, windows: [7d], timezone: `+blackbox.NoonZone()+`, sources: [visitors]}
`)
	}
	write("\n    api_key_expires: 2027-02-24")
	x := startExporter(t, []string{"GLOBEX_KEY=mint_globex"}, blackbox.ConfigArgs(api.URL, file)...)
	m := blackbox.WaitMetrics(t, x.Base, 20*time.Second, map[string]float64{expiry("acme"): 1803427200}) // date -u -d 2027-02-24 +%s
	if v, ok := m[expiry("globex")]; ok {
		t.Errorf("globex has no expiry configured, but /metrics has %s %v", expiry("globex"), v)
	}

	write("\n    api_key_expires: \"2027-05-25T12:30:00+02:00\"")
	if code, body := blackbox.PostReload(t, x.Base); code != http.StatusOK {
		t.Fatalf("reload with a new date: HTTP %d %v", code, body)
	}
	blackbox.WaitMetrics(t, x.Base, 20*time.Second, map[string]float64{expiry("acme"): 1811241000, "mintlify_exporter_config_last_reload_successful{}": 1})

	write("\n    api_key_expires: 2027-25-05")
	code, body := blackbox.PostReload(t, x.Base)
	if want := `mintlify.yml:5: organizations[0].api_key_expires: invalid expiry "2027-25-05"`; code != http.StatusInternalServerError || !strings.Contains(body["error"], want) {
		t.Errorf("reload with a bad date: HTTP %d %v, want 500 with %q", code, body, want)
	}
	blackbox.WaitMetrics(t, x.Base, 20*time.Second, map[string]float64{expiry("acme"): 1811241000, "mintlify_exporter_config_last_reload_successful{}": 0})

	write("")
	if code, body := blackbox.PostReload(t, x.Base); code != http.StatusOK {
		t.Fatalf("reload without a date: HTTP %d %v", code, body)
	}
	m = blackbox.WaitMetrics(t, x.Base, 20*time.Second, map[string]float64{"mintlify_exporter_config_last_reload_successful{}": 1})
	if got := withPrefix(m, "mintlify_api_key_expiry_"); len(got) != 0 {
		t.Errorf("no date configured any more, but /metrics has %v", got)
	}
	x.Stop(t)
}

// TestKeyExpiryFlag: on the flag route, --mintlify.api-key-expires is the
// expiry of the one organization, "default"; a bad value exits at start
// with one line naming the flag.
func TestKeyExpiryFlag(t *testing.T) {
	t.Parallel()
	x := startExporter(t, nil, "--mintlify.sandbox", "--mintlify.api-key-expires=2027-02-24T09:30:00Z")
	blackbox.WaitMetrics(t, x.Base, 20*time.Second, map[string]float64{expiry("default"): 1803461400}) // date -u -d 2027-02-24T09:30:00Z +%s
	x.Stop(t)

	ctx, cancel := context.WithTimeout(t.Context(), testutil.Slack(time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, exporterBin, "--web.listen-address=127.0.0.1:0", "--mintlify.sandbox", "--mintlify.api-key-expires=in 90 days")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := testutil.Run(cmd)
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if err == nil || len(lines) != 1 || !strings.Contains(lines[0], `--mintlify.api-key-expires: invalid expiry "in 90 days"`) {
		t.Errorf("bad --mintlify.api-key-expires: %v, stderr:\n%s", err, stderr.String())
	}
}
