package e2e

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v2"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
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
	out, err := testutil.CombinedOutput(exec.Command(bin, args...))
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
}

// TestExamplePrometheusConfig checks examples/prometheus.yml, and
// prometheus-ha.yml of the high availability variant, as docker compose uses
// them (the rule path resolves to alerts/ both in the repository and in the
// container) and as the end-to-end test rewrites them.
func TestExamplePrometheusConfig(t *testing.T) {
	promtool := lookTool(t, "promtool", "prometheus")
	// The HA variant's second replica, for the rewrite.
	services := map[string]string{"exporter-2": "127.0.0.1:19872"}
	for k, v := range testServices {
		services[k] = v
	}
	for _, name := range []string{"prometheus.yml", "prometheus-ha.yml"} {
		runTool(t, promtool, "check", "config", filepath.Join(examplesDir(), name))

		out, err := rewritePrometheusConfig(readExample(t, name), examplesDir(), promRewrite{Interval: "1s", Services: services})
		if err != nil {
			t.Fatalf("rewriting examples/%s for the e2e test: %v", name, err)
		}
		want := []string{services["exporter"], services["alertmanager"], filepath.Join(repoRoot(), "alerts")}
		if name == "prometheus-ha.yml" {
			want = append(want, services["exporter-2"])
		}
		for _, w := range want {
			if !strings.Contains(string(out), w) {
				t.Errorf("rewritten %s lacks %q:\n%s", name, w, out)
			}
		}
		f := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(f, out, 0o600); err != nil {
			t.Fatal(err)
		}
		runTool(t, promtool, "check", "config", f)
	}
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
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]interface{}    `yaml:"volumes"`
}

type composeService struct {
	Build     interface{} `yaml:"build"`
	Image     string      `yaml:"image"`
	Command   []string    `yaml:"command"`
	Volumes   []string    `yaml:"volumes"`
	Ports     []string    `yaml:"ports"`
	DependsOn []string    `yaml:"depends_on"`
}

type mount struct{ src, dst string }

// loadCompose reads compose files of examples/ as docker compose -f
// FILE -f FILE... merges them: a later file's service adds to the earlier
// one's, replacing its image, build and command, and its volumes by their
// target path (what docker compose config shows); depends_on and the
// top-level volumes add up.
func loadCompose(t *testing.T, files ...string) composeFile {
	t.Helper()
	out := composeFile{Services: map[string]composeService{}, Volumes: map[string]interface{}{}}
	for _, f := range files {
		var c composeFile
		if err := yaml.Unmarshal(readExample(t, f), &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for k, v := range c.Volumes {
			out.Volumes[k] = v
		}
		for name, s := range c.Services {
			m, ok := out.Services[name]
			if !ok {
				out.Services[name] = s
				continue
			}
			if s.Build != nil {
				m.Build = s.Build
			}
			if s.Image != "" {
				m.Image = s.Image
			}
			if s.Command != nil {
				m.Command = s.Command
			}
			for _, v := range s.Volumes {
				replaced := false
				for i, old := range m.Volumes {
					if volumeTarget(old) == volumeTarget(v) {
						m.Volumes[i], replaced = v, true
					}
				}
				if !replaced {
					m.Volumes = append(m.Volumes, v)
				}
			}
			m.Ports = append(m.Ports, s.Ports...)
			m.DependsOn = append(m.DependsOn, s.DependsOn...)
			out.Services[name] = m
		}
	}
	return out
}

// volumeTarget is the path in the container of a short-syntax volume
// (source:target[:mode]).
func volumeTarget(v string) string {
	parts := strings.Split(v, ":")
	if len(parts) < 2 {
		return v
	}
	return parts[1]
}

// TestComposeFile checks docker-compose.yml for what docker compose would
// only find out at run time (see checkCompose).
func TestComposeFile(t *testing.T) {
	t.Parallel() // each builds the exporter
	c := loadCompose(t, "docker-compose.yml")
	checkCompose(t, c, "prometheus.yml")
}

// TestComposeHAFile checks the high availability variant,
// docker-compose.yml with docker-compose.ha.yml over it, as checkCompose
// does, and that it is what it says: two or more replicas of the exporter,
// each reading a configuration whose cluster: section names the Redis
// service, each with the job gateway (one runs it on the jobs in Redis, the
// others forward to it) and without an advertise URL in a file they share
// (each must advertise its own address: the default), each on a host port
// of its own and scraped by Prometheus; and that mintlify-ha.yml
// and prometheus-ha.yml differ from mintlify.yml and prometheus.yml only in
// the cluster section and the scrape targets.
func TestComposeHAFile(t *testing.T) {
	t.Parallel() // each builds the exporter
	c := loadCompose(t, "docker-compose.yml", "docker-compose.ha.yml")
	exporters := checkCompose(t, c, "prometheus-ha.yml")
	if len(exporters) < 2 {
		t.Fatalf("docker-compose.ha.yml: %d exporter service(s) %v, want two replicas or more", len(exporters), exporters)
	}
	redis, ok := c.Services["redis"]
	if !ok || !strings.HasPrefix(redis.Image, "redis:") && !strings.HasPrefix(redis.Image, "valkey/valkey:") {
		t.Errorf("docker-compose.ha.yml: want a service redis running Redis or Valkey, got %+v", redis)
	}
	hostPorts := map[string]string{}
	addresses := map[string]bool{}
	for name, e := range exporters {
		if e.cluster == nil || e.cluster.Address == "" {
			t.Errorf("service %s: %s has no cluster: address", name, e.config)
			continue
		}
		addresses[e.cluster.Address] = true
		if host, _, _ := net.SplitHostPort(e.cluster.Address); host != "redis" {
			t.Errorf("service %s: cluster address %s is not the redis service", name, e.cluster.Address)
		}
		if !slices.Contains(c.Services[name].Command, "--web.enable-agent-api") {
			t.Errorf("service %s: no --web.enable-agent-api: the variant shows the job gateway on every replica", name)
		}
		if e.cluster.AdvertiseURL != "" {
			t.Errorf("service %s: %s names advertise_url %s: every replica reading it would advertise that one address", name, e.config, e.cluster.AdvertiseURL)
		}
		for _, p := range c.Services[name].Ports {
			parts := strings.Split(p, ":")
			hp := strings.Join(parts[:len(parts)-1], ":")
			if other, ok := hostPorts[hp]; ok {
				t.Errorf("services %s and %s both publish %s", name, other, hp)
			}
			hostPorts[hp] = name
		}
	}
	if len(addresses) > 1 {
		t.Errorf("the replicas name different Redis addresses %v: they would not share a budget", addresses)
	}

	// Prometheus scrapes every replica.
	var prom struct {
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(readExample(t, "prometheus-ha.yml"), &prom); err != nil {
		t.Fatal(err)
	}
	scraped := map[string]bool{}
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			for _, tg := range st.Targets {
				host, _, _ := net.SplitHostPort(tg)
				scraped[host] = true
			}
		}
	}
	for name := range exporters {
		if !scraped[name] {
			t.Errorf("prometheus-ha.yml does not scrape the replica %s", name)
		}
	}

	// The HA files are the demo's files with their one difference.
	sameBut(t, "mintlify.yml", "mintlify-ha.yml", func(m yamlMap) { delete(m, "cluster") })
	sameBut(t, "prometheus.yml", "prometheus-ha.yml", func(m yamlMap) {
		scs, _ := m["scrape_configs"].([]interface{})
		for _, sc := range scs {
			scm, _ := sc.(yamlMap)
			sts, _ := scm["static_configs"].([]interface{})
			for _, st := range sts {
				if stm, ok := st.(yamlMap); ok {
					delete(stm, "targets")
				}
			}
		}
	})
}

// sameBut fails unless the examples a and b, parsed, are equal once strip
// has removed their intended difference from both.
func sameBut(t *testing.T, a, b string, strip func(yamlMap)) {
	t.Helper()
	var ma, mb yamlMap
	if err := yaml.Unmarshal(readExample(t, a), &ma); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := yaml.Unmarshal(readExample(t, b), &mb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	strip(ma)
	strip(mb)
	if !reflect.DeepEqual(ma, mb) {
		ya, _ := yaml.Marshal(ma)
		yb, _ := yaml.Marshal(mb)
		t.Errorf("%s differs from %s beyond what it is for: copy the change over\n--- %s\n%s\n--- %s\n%s", b, a, a, ya, b, yb)
	}
}

// composeExporter is an exporter service of a compose file: the
// configuration file it reads (a host path) and that file's cluster section.
type composeExporter struct {
	config  string
	cluster *composeCluster
}

// composeCluster is the part of a configuration file's cluster: section
// the compose tests check.
type composeCluster struct {
	Address      string `yaml:"address"`
	AdvertiseURL string `yaml:"advertise_url"`
}

// checkCompose checks what docker compose would only find out at run
// time: files it mounts exist, each --config.file is mounted, every flag of
// an exporter service is a flag of the exporter and its configuration file
// passes config check, Prometheus (reading promFile) finds the rules inside
// the container, Grafana's provider reads the mounted dashboards, and every
// host the configs name is a service. It returns the exporter services (those
// built from the repository) by name.
func checkCompose(t *testing.T, c composeFile, promFile string) map[string]composeExporter {
	t.Helper()
	dir := examplesDir()
	for _, want := range []string{"exporter", "prometheus", "alertmanager", "grafana"} {
		if _, ok := c.Services[want]; !ok {
			t.Errorf("compose: no service %q", want)
		}
	}
	bin := exporterBin
	flags := exporterFlags(t, bin)
	exporters := map[string]composeExporter{}
	mounts := map[string][]mount{}
	for name, s := range c.Services {
		for _, d := range s.DependsOn {
			if _, ok := c.Services[d]; !ok {
				t.Errorf("service %s: depends_on %q is not a service", name, d)
			}
		}
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
		var config string
		for _, arg := range s.Command {
			if f, ok := strings.CutPrefix(arg, "--config.file="); ok {
				if host := hostPath(mounts[name], f); host == "" {
					t.Errorf("service %s: %s is not in a mounted file or directory", name, arg)
				} else if _, err := os.Stat(host); err != nil {
					t.Errorf("service %s: %s: %v", name, arg, err)
				} else {
					config = host
				}
			}
		}
		if s.Build == nil {
			continue
		}
		// An exporter: its flags and its configuration file.
		e := composeExporter{config: config}
		for _, arg := range s.Command {
			flag, _, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
			if !strings.HasPrefix(arg, "--") || !flags[flag] {
				t.Errorf("service %s: %q is not a flag of mintlify_exporter serve", name, arg)
			}
		}
		if config != "" {
			if out, err := testutil.CombinedOutput(exec.Command(bin, "config", "check", "--config.file="+config)); err != nil {
				t.Errorf("service %s: config check %s: %v\n%s", name, config, err, out)
			}
			var f struct {
				Cluster *composeCluster `yaml:"cluster"`
			}
			if err := yaml.Unmarshal(readFile(t, config), &f); err != nil {
				t.Errorf("service %s: %s: %v", name, config, err)
			}
			e.cluster = f.Cluster
		}
		exporters[name] = e
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
	for name, e := range exporters {
		if e.cluster != nil {
			isService(fmt.Sprintf("service %s: %s: cluster address", name, filepath.Base(e.config)), e.cluster.Address)
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
	if err := yaml.Unmarshal(readExample(t, promFile), &prom); err != nil {
		t.Fatalf("%s: %v", promFile, err)
	}
	promConfig := "/etc/prometheus/prometheus.yml" // the image's default
	for _, arg := range c.Services["prometheus"].Command {
		if f, ok := strings.CutPrefix(arg, "--config.file="); ok {
			promConfig = f
		}
	}
	if h := hostPath(mounts["prometheus"], promConfig); filepath.Clean(h) != filepath.Join(dir, promFile) {
		t.Errorf("prometheus: %s is %q on the host, want examples/%s", promConfig, h, promFile)
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
				isService(promFile+" alertmanager", tg)
			}
		}
	}
	for _, s := range prom.ScrapeConfigs {
		for _, sc := range s.StaticConfigs {
			for _, tg := range sc.Targets {
				isService(promFile+" scrape target", tg)
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
	return exporters
}

// exporterFlags reads the flags of the exporter's serve command (the
// default command, which the compose services run) from its --help.
func exporterFlags(t *testing.T, bin string) map[string]bool {
	t.Helper()
	out, err := testutil.CombinedOutput(exec.Command(bin, "serve", "--help"))
	if err != nil {
		t.Fatalf("mintlify_exporter serve --help: %v\n%s", err, out)
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`--(\[no-\])?([a-z0-9.-]+)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[2]] = true
	}
	if !flags["config.file"] || !flags["cluster.redis-address"] {
		t.Fatalf("mintlify_exporter serve --help lists no --config.file or --cluster.redis-address:\n%s", out)
	}
	return flags
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
