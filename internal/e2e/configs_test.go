package e2e

// The example configurations in examples/ are the ones the end-to-end test
// runs with: these helpers load them and rewrite only what must differ on a
// test machine (addresses of the compose services, intervals, rule paths,
// the webhook URL). Anything else in them is used as it is, so an example
// that stops working fails the test.

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v2"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// repoRoot is the repository's root directory: the tests here read its
// files (docs, examples, the Makefile, scripts) by their paths in it.
func repoRoot() string { return testutil.ModuleRoot() }

// examplesDir is the repository's examples/ directory.
func examplesDir() string { return filepath.Join(repoRoot(), "examples") }

// lookTool returns the path of an external program. Outside CI a missing
// program skips the test with a message; under CI=true it fails, so CI
// cannot pass without running the test.
func lookTool(t testing.TB, name, debianPackage string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found; CI must install Debian's %s package (.ci/run does)", name, debianPackage)
	}
	t.Skipf("%s not found: install Debian's %s package to run this test (apt-get install %s)", name, debianPackage, debianPackage)
	return ""
}

type yamlMap = map[interface{}]interface{}

// promRewrite says how to adapt examples/prometheus.yml to a test run.
type promRewrite struct {
	// Interval replaces the scrape and evaluation intervals and the scrape
	// timeout everywhere, e.g. "1s".
	Interval string
	// Services maps the docker compose service names used as target hosts
	// in the example (exporter, alertmanager) to host:port addresses.
	Services map[string]string
}

// rewritePrometheusConfig adapts the example Prometheus configuration src,
// read from dir, for a test run. It fails on anything it does not know how
// to rewrite rather than leave an address pointing at nothing.
func rewritePrometheusConfig(src []byte, dir string, rw promRewrite) ([]byte, error) {
	var cfg yamlMap
	if err := yaml.UnmarshalStrict(src, &cfg); err != nil {
		return nil, fmt.Errorf("parsing: %w", err)
	}
	global, _ := cfg["global"].(yamlMap)
	if global == nil {
		global = yamlMap{}
		cfg["global"] = global
	}
	global["scrape_interval"] = rw.Interval
	global["scrape_timeout"] = rw.Interval
	global["evaluation_interval"] = rw.Interval

	rules, _ := cfg["rule_files"].([]interface{})
	if len(rules) == 0 {
		return nil, fmt.Errorf("no rule_files: the example must load the alerting rules")
	}
	for i, r := range rules {
		p, ok := r.(string)
		if !ok {
			return nil, fmt.Errorf("rule_files[%d] is not a string", i)
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		matches, err := filepath.Glob(p)
		if err != nil || len(matches) == 0 {
			return nil, fmt.Errorf("rule_files[%d] %q matches no file (resolved to %s)", i, r, p)
		}
		rules[i] = p
	}

	alerting, _ := cfg["alerting"].(yamlMap)
	ams, _ := alerting["alertmanagers"].([]interface{})
	if len(ams) == 0 {
		return nil, fmt.Errorf("no alerting.alertmanagers: the example must send alerts to Alertmanager")
	}
	for i, am := range ams {
		if err := rewriteStaticTargets(am, rw.Services); err != nil {
			return nil, fmt.Errorf("alerting.alertmanagers[%d]: %w", i, err)
		}
	}

	scs, _ := cfg["scrape_configs"].([]interface{})
	if len(scs) == 0 {
		return nil, fmt.Errorf("no scrape_configs")
	}
	for i, sc := range scs {
		m, _ := sc.(yamlMap)
		if m == nil {
			return nil, fmt.Errorf("scrape_configs[%d] is not a mapping", i)
		}
		for _, k := range []string{"scrape_interval", "scrape_timeout"} {
			if _, ok := m[k]; ok {
				m[k] = rw.Interval
			}
		}
		if err := rewriteStaticTargets(m, rw.Services); err != nil {
			return nil, fmt.Errorf("scrape_configs[%d] (job %v): %w", i, m["job_name"], err)
		}
	}
	return yaml.Marshal(cfg)
}

// rewriteStaticTargets replaces the hosts of every static_configs target of
// a scrape or alertmanager config. Other service discovery is refused: the
// test could not point it at its own processes.
func rewriteStaticTargets(v interface{}, services map[string]string) error {
	m, _ := v.(yamlMap)
	if m == nil {
		return fmt.Errorf("not a mapping")
	}
	for k := range m {
		if ks, _ := k.(string); strings.HasSuffix(ks, "_sd_configs") {
			return fmt.Errorf("%s: only static_configs can be rewritten for the test", ks)
		}
	}
	scs, _ := m["static_configs"].([]interface{})
	if len(scs) == 0 {
		return fmt.Errorf("no static_configs")
	}
	for _, sc := range scs {
		scm, _ := sc.(yamlMap)
		targets, _ := scm["targets"].([]interface{})
		if len(targets) == 0 {
			return fmt.Errorf("static_configs without targets")
		}
		for i, tg := range targets {
			s, _ := tg.(string)
			host, _, err := net.SplitHostPort(s)
			if err != nil {
				return fmt.Errorf("target %q: %w", s, err)
			}
			addr, ok := services[host]
			if !ok {
				return fmt.Errorf("target %q: %q is not a docker compose service the test runs", s, host)
			}
			targets[i] = addr
		}
	}
	return nil
}

// amRewrite says how to adapt examples/alertmanager.yml to a test run.
type amRewrite struct {
	// WebhookBase replaces scheme and host of every webhook URL, e.g. the
	// URL of an httptest server.
	WebhookBase string
	// Timers of every route, shorter than a person wants (the example's
	// values would make the test wait minutes for the first notification).
	GroupWait, GroupInterval, RepeatInterval string
}

// rewriteAlertmanagerConfig adapts the example Alertmanager configuration.
func rewriteAlertmanagerConfig(src []byte, rw amRewrite) ([]byte, error) {
	var cfg yamlMap
	if err := yaml.UnmarshalStrict(src, &cfg); err != nil {
		return nil, fmt.Errorf("parsing: %w", err)
	}
	route, _ := cfg["route"].(yamlMap)
	if route == nil {
		return nil, fmt.Errorf("no route")
	}
	var walk func(r yamlMap, top bool)
	walk = func(r yamlMap, top bool) {
		for k, v := range map[string]string{"group_wait": rw.GroupWait, "group_interval": rw.GroupInterval, "repeat_interval": rw.RepeatInterval} {
			if _, ok := r[k]; ok || top {
				r[k] = v
			}
		}
		subs, _ := r["routes"].([]interface{})
		for _, s := range subs {
			if sm, ok := s.(yamlMap); ok {
				walk(sm, false)
			}
		}
	}
	walk(route, true)

	base, err := url.Parse(rw.WebhookBase)
	if err != nil {
		return nil, err
	}
	receivers, _ := cfg["receivers"].([]interface{})
	webhooks := 0
	for i, r := range receivers {
		rm, _ := r.(yamlMap)
		for k, v := range rm {
			switch k {
			case "name":
			case "webhook_configs":
				whs, _ := v.([]interface{})
				for _, wh := range whs {
					whm, _ := wh.(yamlMap)
					s, _ := whm["url"].(string)
					u, err := url.Parse(s)
					if err != nil || u.Host == "" {
						return nil, fmt.Errorf("receivers[%d] (%v): webhook url %q: want an absolute URL", i, rm["name"], s)
					}
					u.Scheme, u.Host = base.Scheme, base.Host
					whm["url"] = u.String()
					webhooks++
				}
			default:
				// Anything else would notify a real service from a test.
				return nil, fmt.Errorf("receivers[%d] (%v): %v: only webhook_configs can be rewritten for the test", i, rm["name"], k)
			}
		}
	}
	if webhooks == 0 {
		return nil, fmt.Errorf("no webhook receiver")
	}
	return yaml.Marshal(cfg)
}
