package orgs

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	// The kinds declare their keys (agent_jobs, ...) to the configuration.
	_ "github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
)

// describeConfig has two organizations, one project each.
const describeConfig = `organizations:
  - {name: acme, api_key_file: /etc/mintlify/acme.key, analytics_budget: 50, api_key_expires: 2027-02-24}
  - {name: beta, api_key_env: BETA_KEY}
projects:
  - {id: acme-docs, organization: acme, windows: [1d, 7d, "30d:6h"], timezone: Europe/Berlin, agent_jobs: true, automations: [nightly]}
  - {id: beta-docs, organization: beta}
`

func TestDescribe(t *testing.T) {
	cfg, err := config.Parse("c.yml", []byte(describeConfig), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Describe(&out, cfg, refresh.Config{MinInterval: 5 * time.Minute, PageSize: 250, FinalDayDelay: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 organization(s), 2 project(s)", "organization acme: key from file /etc/mintlify/acme.key, analytics budget 50",
		"project acme-docs: windows 1d 7d 30d:6h, timezone Europe/Berlin", "agent jobs on, deployments off, static exports off, automations nightly", "project beta-docs: windows 1d, timezone UTC, paths at most 1000, sources visitors views feedback searches, agent jobs off, deployments off, static exports off, automations off", "acme-docs/visitors/30d pages every", "acme-docs/visitors/1d site every", "sources visitors views feedback searches", "organization beta: key from environment variable BETA_KEY"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// The expiry is told under its organization, in UTC.
	if !regexp.MustCompile(`\norganization acme: [^\n]*\n  key expires 2027-02-24T00:00:00Z\n`).MatchString(out.String()) {
		t.Errorf("no line \"key expires 2027-02-24T00:00:00Z\" under organization acme:\n%s", out.String())
	}
	if n := strings.Count(out.String(), "key expires"); n != 1 {
		t.Errorf("%d lines tell a key's expiry, want 1 (beta has none):\n%s", n, out.String())
	}
}
