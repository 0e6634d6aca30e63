package e2e

import (
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v2"
)

// testServices stands in for the compose services when a rewritten
// configuration is only checked, not run.
var testServices = map[string]string{"exporter": "127.0.0.1:19871", "alertmanager": "127.0.0.1:19093"}

func readExample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(examplesDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func runTool(t *testing.T, bin string, args ...string) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
}

// TestExamplePrometheusConfig checks examples/prometheus.yml as docker
// compose uses it (its rule path resolves to alerts/ both in the repository
// and in the container) and as the end-to-end test rewrites it.
func TestExamplePrometheusConfig(t *testing.T) {
	promtool := lookTool(t, "promtool", "prometheus")
	runTool(t, promtool, "check", "config", filepath.Join(examplesDir(), "prometheus.yml"))

	out, err := rewritePrometheusConfig(readExample(t, "prometheus.yml"), examplesDir(), promRewrite{Interval: "1s", Services: testServices})
	if err != nil {
		t.Fatalf("rewriting examples/prometheus.yml for the e2e test: %v", err)
	}
	for _, want := range []string{testServices["exporter"], testServices["alertmanager"], filepath.Join(repoRoot(), "alerts")} {
		if !strings.Contains(string(out), want) {
			t.Errorf("rewritten config lacks %q:\n%s", want, out)
		}
	}
	f := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(f, out, 0o600); err != nil {
		t.Fatal(err)
	}
	runTool(t, promtool, "check", "config", f)
}

// TestExampleAlertmanagerConfig checks examples/alertmanager.yml, as it is
// and as the end-to-end test rewrites it.
func TestExampleAlertmanagerConfig(t *testing.T) {
	amtool := lookTool(t, "amtool", "prometheus-alertmanager")
	runTool(t, amtool, "check-config", filepath.Join(examplesDir(), "alertmanager.yml"))

	out, err := rewriteAlertmanagerConfig(readExample(t, "alertmanager.yml"), amRewrite{
		WebhookBase: "http://127.0.0.1:1", GroupWait: "1s", GroupInterval: "1s", RepeatInterval: "1h",
	})
	if err != nil {
		t.Fatalf("rewriting examples/alertmanager.yml for the e2e test: %v", err)
	}
	if !strings.Contains(string(out), "http://127.0.0.1:1/") {
		t.Errorf("rewritten config lacks the webhook URL:\n%s", out)
	}
	f := filepath.Join(t.TempDir(), "alertmanager.yml")
	if err := os.WriteFile(f, out, 0o600); err != nil {
		t.Fatal(err)
	}
	runTool(t, amtool, "check-config", f)
}

type composeFile struct {
	Services map[string]struct {
		Build   interface{} `yaml:"build"`
		Image   string      `yaml:"image"`
		Command []string    `yaml:"command"`
		Volumes []string    `yaml:"volumes"`
	} `yaml:"services"`
	Volumes map[string]interface{} `yaml:"volumes"`
}

type mount struct{ src, dst string }

// TestComposeFile checks what docker compose would only find out at run
// time: files it mounts exist, each --config.file is mounted, Prometheus'
// rule path resolves to the rules inside the container, Grafana's provider
// reads the mounted dashboards, and every host the configs name is a
// service.
func TestComposeFile(t *testing.T) {
	dir := examplesDir()
	var c composeFile
	if err := yaml.Unmarshal(readExample(t, "docker-compose.yml"), &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	for _, want := range []string{"exporter", "prometheus", "alertmanager", "grafana"} {
		if _, ok := c.Services[want]; !ok {
			t.Errorf("docker-compose.yml: no service %q", want)
		}
	}
	mounts := map[string][]mount{}
	for name, s := range c.Services {
		if s.Build == nil && s.Image == "" {
			t.Errorf("service %s: neither build nor image", name)
		}
		if s.Image != "" && !strings.Contains(s.Image, ":") {
			t.Errorf("service %s: image %q has no pinned tag", name, s.Image)
		}
		if s.Build != nil {
			ctx, _ := s.Build.(string)
			if m, ok := s.Build.(map[interface{}]interface{}); ok {
				ctx, _ = m["context"].(string)
			}
			if _, err := os.Stat(filepath.Join(dir, ctx, "Dockerfile")); err != nil {
				t.Errorf("service %s: build context %q: %v", name, ctx, err)
			}
		}
		for _, v := range s.Volumes {
			parts := strings.Split(v, ":")
			if len(parts) < 2 {
				t.Errorf("service %s: volume %q: want source:target", name, v)
				continue
			}
			src, dst := parts[0], parts[1]
			if strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/") {
				src = filepath.Join(dir, src)
				if _, err := os.Stat(src); err != nil {
					t.Errorf("service %s: bind mount %q: %v", name, v, err)
				}
			} else if _, ok := c.Volumes[src]; !ok {
				t.Errorf("service %s: volume %q is not declared under volumes:", name, src)
			}
			mounts[name] = append(mounts[name], mount{src, dst})
		}
		for _, arg := range s.Command {
			if f, ok := strings.CutPrefix(arg, "--config.file="); ok {
				if host := hostPath(mounts[name], f); host == "" {
					t.Errorf("service %s: %s is not in a mounted file or directory", name, arg)
				} else if _, err := os.Stat(host); err != nil {
					t.Errorf("service %s: %s: %v", name, arg, err)
				}
			}
		}
	}
	isService := func(what, hostport string) {
		host, _, err := net.SplitHostPort(hostport)
		if err != nil {
			t.Errorf("%s: %q: %v", what, hostport, err)
			return
		}
		if _, ok := c.Services[host]; !ok {
			t.Errorf("%s: host %q is not a docker compose service", what, host)
		}
	}

	// Prometheus: rule files as the container sees them, and the hosts of
	// its targets.
	var prom struct {
		RuleFiles []string `yaml:"rule_files"`
		Alerting  struct {
			Alertmanagers []struct {
				StaticConfigs []struct {
					Targets []string `yaml:"targets"`
				} `yaml:"static_configs"`
			} `yaml:"alertmanagers"`
		} `yaml:"alerting"`
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(readExample(t, "prometheus.yml"), &prom); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	promConfig := "/etc/prometheus/prometheus.yml" // the image's default
	for _, arg := range c.Services["prometheus"].Command {
		if f, ok := strings.CutPrefix(arg, "--config.file="); ok {
			promConfig = f
		}
	}
	if h := hostPath(mounts["prometheus"], promConfig); filepath.Clean(h) != filepath.Join(dir, "prometheus.yml") {
		t.Errorf("prometheus: %s is %q on the host, want examples/prometheus.yml", promConfig, h)
	}
	for _, rf := range prom.RuleFiles {
		inContainer := rf
		if !path.IsAbs(rf) {
			inContainer = path.Join(path.Dir(promConfig), rf)
		}
		host := hostPath(mounts["prometheus"], inContainer)
		if host == "" {
			t.Errorf("prometheus: rule_files %q is %s in the container, which is not mounted", rf, inContainer)
			continue
		}
		if m, _ := filepath.Glob(host); len(m) == 0 {
			t.Errorf("prometheus: rule_files %q (%s in the container, %s here) matches no file", rf, inContainer, host)
		}
	}
	for _, am := range prom.Alerting.Alertmanagers {
		for _, sc := range am.StaticConfigs {
			for _, tg := range sc.Targets {
				isService("prometheus.yml alertmanager", tg)
			}
		}
	}
	for _, s := range prom.ScrapeConfigs {
		for _, sc := range s.StaticConfigs {
			for _, tg := range sc.Targets {
				isService("prometheus.yml scrape target", tg)
			}
		}
	}

	// Alertmanager's webhooks.
	var am struct {
		Receivers []struct {
			WebhookConfigs []struct {
				URL string `yaml:"url"`
			} `yaml:"webhook_configs"`
		} `yaml:"receivers"`
	}
	if err := yaml.Unmarshal(readExample(t, "alertmanager.yml"), &am); err != nil {
		t.Fatalf("alertmanager.yml: %v", err)
	}
	for _, r := range am.Receivers {
		for _, wh := range r.WebhookConfigs {
			u, err := url.Parse(wh.URL)
			if err != nil {
				t.Errorf("alertmanager.yml: %v", err)
				continue
			}
			isService("alertmanager.yml webhook", u.Host)
		}
	}

	// Grafana: the data source points at the Prometheus service and the
	// dashboard provider reads the mounted dashboards/ directory.
	prov := hostPath(mounts["grafana"], "/etc/grafana/provisioning")
	if prov == "" {
		t.Fatalf("grafana: /etc/grafana/provisioning is not mounted")
	}
	var ds struct {
		Datasources []struct {
			Type string `yaml:"type"`
			UID  string `yaml:"uid"`
			URL  string `yaml:"url"`
		} `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(readFile(t, filepath.Join(prov, "datasources", "prometheus.yml")), &ds); err != nil {
		t.Fatal(err)
	}
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].UID == "" {
		t.Errorf("grafana data sources: want one prometheus data source with a uid, got %+v", ds.Datasources)
	}
	for _, d := range ds.Datasources {
		if u, err := url.Parse(d.URL); err != nil {
			t.Errorf("grafana data source url %q: %v", d.URL, err)
		} else {
			isService("grafana data source", u.Host)
		}
	}
	var dp struct {
		Providers []struct {
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	if err := yaml.Unmarshal(readFile(t, filepath.Join(prov, "dashboards", "mintlify.yml")), &dp); err != nil {
		t.Fatal(err)
	}
	if len(dp.Providers) == 0 {
		t.Fatal("grafana: no dashboard provider")
	}
	for _, p := range dp.Providers {
		host := hostPath(mounts["grafana"], p.Options.Path)
		if filepath.Clean(host) != filepath.Join(repoRoot(), "dashboards") {
			t.Errorf("grafana: dashboard provider path %q is %q on the host, want the repository's dashboards/", p.Options.Path, host)
			continue
		}
		if m, _ := filepath.Glob(filepath.Join(host, "*.json")); len(m) == 0 {
			t.Errorf("grafana: no dashboard (*.json) in %s", host)
		}
	}
}

// hostPath maps a path inside a container to the host path of the bind
// mount holding it, or "" when none does.
func hostPath(mounts []mount, p string) string {
	best := -1
	var out string
	for _, m := range mounts {
		if !strings.HasPrefix(m.src, "/") {
			continue // a named volume
		}
		rel, ok := strings.CutPrefix(path.Clean(p), path.Clean(m.dst))
		if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) || len(m.dst) <= best {
			continue
		}
		best, out = len(m.dst), filepath.Join(m.src, filepath.FromSlash(rel))
	}
	return out
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRewriteRefusesWhatItCannotRedirect: a config the test cannot point at
// its own processes must fail loudly, not reach a real service.
func TestRewriteRefusesWhatItCannotRedirect(t *testing.T) {
	for name, src := range map[string]string{
		"unknown host": `
rule_files: [../alerts/*.rules.yml]
alerting: {alertmanagers: [{static_configs: [{targets: ["alertmanager:9093"]}]}]}
scrape_configs: [{job_name: x, static_configs: [{targets: ["somewhere:80"]}]}]`,
		"service discovery": `
rule_files: [../alerts/*.rules.yml]
alerting: {alertmanagers: [{static_configs: [{targets: ["alertmanager:9093"]}]}]}
scrape_configs: [{job_name: x, dns_sd_configs: [{names: [exporter]}], static_configs: [{targets: ["exporter:9871"]}]}]`,
		"missing rules": `
rule_files: [../nothing/*.yml]
alerting: {alertmanagers: [{static_configs: [{targets: ["alertmanager:9093"]}]}]}
scrape_configs: [{job_name: x, static_configs: [{targets: ["exporter:9871"]}]}]`,
	} {
		_, err := rewritePrometheusConfig([]byte(src), examplesDir(), promRewrite{Interval: "1s", Services: testServices})
		if err == nil {
			t.Errorf("prometheus, %s: no error", name)
		}
		t.Logf("prometheus, %s: %v", name, err)
	}
	src := `
route: {receiver: r}
receivers: [{name: r, slack_configs: [{api_url: "https://hooks.slack.com/x", channel: "#a"}]}]`
	_, err := rewriteAlertmanagerConfig([]byte(src), amRewrite{WebhookBase: "http://127.0.0.1:1"})
	if err == nil {
		t.Error("alertmanager, slack receiver: no error")
	}
	t.Logf("alertmanager, slack receiver: %v", err)
}
