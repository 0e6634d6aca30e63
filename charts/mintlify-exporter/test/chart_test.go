// Package charttest renders the Helm chart with helm and decodes every object strictly (unknown fields
// fail) into its Kubernetes or prometheus-operator Go type, then checks what each values set must
// produce. It is its own Go module so that k8s.io/api and prometheus-operator stay out of the
// exporter's go.mod. Run it with scripts/chart-check.sh (which installs helm), or with helm on PATH
// (or HELM=/path/to/helm): go test ./... in this directory.
package charttest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

const (
	chartDir  = ".."
	repoRoot  = "../../.."
	release   = "rel"
	namespace = "monitoring"
	fullname  = "rel-mintlify-exporter"
)

var helmBin string

func TestMain(m *testing.M) {
	helmBin = os.Getenv("HELM")
	if helmBin == "" {
		var err error
		if helmBin, err = exec.LookPath("helm"); err != nil {
			// Never skip: this module only runs where helm is wanted.
			fmt.Fprintln(os.Stderr, "helm not found: put it on PATH or set HELM (scripts/chart-check.sh installs it)")
			os.Exit(1)
		}
	}
	code := m.Run()
	if exporterBinDir != "" {
		os.RemoveAll(exporterBinDir)
	}
	os.Exit(code)
}

// helmTemplate runs helm template on the chart with the given extra arguments.
func helmTemplate(args ...string) (string, error) {
	cmd := exec.Command(helmBin, append([]string{"template", release, chartDir, "--namespace", namespace}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("helm template %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// rendered holds the objects of one rendering, each decoded strictly into its Go type.
type rendered struct {
	deployment      *appsv1.Deployment
	service         *corev1.Service
	pvcs            []*corev1.PersistentVolumeClaim
	configMaps      []*corev1.ConfigMap
	serviceMonitors []*monitoringv1.ServiceMonitor
	prometheusRules []*monitoringv1.PrometheusRule
	pdbs            []*policyv1.PodDisruptionBudget
	kinds           []string
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeStrict decodes YAML into v and fails on unknown or duplicate fields.
func decodeStrict(doc []byte, v any) error {
	return yaml.UnmarshalStrict(doc, v)
}

func render(t *testing.T, args ...string) *rendered {
	t.Helper()
	out, err := helmTemplate(args...)
	if err != nil {
		t.Fatal(err)
	}
	r := &rendered{}
	for _, doc := range docSep.Split(out, -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, doc)
		}
		var obj any
		switch meta.APIVersion + " " + meta.Kind {
		case "apps/v1 Deployment":
			if r.deployment != nil {
				t.Errorf("more than one Deployment")
			}
			r.deployment = &appsv1.Deployment{}
			obj = r.deployment
		case "v1 Service":
			if r.service != nil {
				t.Errorf("more than one Service")
			}
			r.service = &corev1.Service{}
			obj = r.service
		case "v1 PersistentVolumeClaim":
			o := &corev1.PersistentVolumeClaim{}
			r.pvcs, obj = append(r.pvcs, o), o
		case "v1 ConfigMap":
			o := &corev1.ConfigMap{}
			r.configMaps, obj = append(r.configMaps, o), o
		case "monitoring.coreos.com/v1 ServiceMonitor":
			o := &monitoringv1.ServiceMonitor{}
			r.serviceMonitors, obj = append(r.serviceMonitors, o), o
		case "monitoring.coreos.com/v1 PrometheusRule":
			o := &monitoringv1.PrometheusRule{}
			r.prometheusRules, obj = append(r.prometheusRules, o), o
		case "policy/v1 PodDisruptionBudget":
			o := &policyv1.PodDisruptionBudget{}
			r.pdbs, obj = append(r.pdbs, o), o
		default:
			t.Fatalf("unexpected object %s %s:\n%s", meta.APIVersion, meta.Kind, doc)
		}
		if err := decodeStrict([]byte(doc), obj); err != nil {
			t.Fatalf("%s does not decode strictly into its Go type: %v\n%s", meta.Kind, err, doc)
		}
		r.kinds = append(r.kinds, meta.Kind)
	}
	sort.Strings(r.kinds)
	if r.deployment == nil || r.service == nil {
		t.Fatalf("want a Deployment and a Service, got %v", r.kinds)
	}
	return r
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func (r *rendered) container(t *testing.T) corev1.Container {
	t.Helper()
	cs := r.deployment.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("want one container, got %d", len(cs))
	}
	return cs[0]
}

func (r *rendered) volume(name string) (corev1.Volume, bool) {
	for _, v := range r.deployment.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return v, true
		}
	}
	return corev1.Volume{}, false
}

func mountPath(c corev1.Container, name string) string {
	for _, m := range c.VolumeMounts {
		if m.Name == name {
			return m.MountPath
		}
	}
	return ""
}

func wantKinds(t *testing.T, r *rendered, want ...string) {
	t.Helper()
	sort.Strings(want)
	if !slices.Equal(r.kinds, want) {
		t.Errorf("objects: got %v, want %v", r.kinds, want)
	}
}

func wantArgs(t *testing.T, c corev1.Container, want ...string) {
	t.Helper()
	for _, a := range want {
		if !slices.Contains(c.Args, a) {
			t.Errorf("args %q lack %q", c.Args, a)
		}
	}
}

func noArgPrefix(t *testing.T, c corev1.Container, prefixes ...string) {
	t.Helper()
	for _, a := range c.Args {
		for _, p := range prefixes {
			if strings.HasPrefix(a, p) {
				t.Errorf("unexpected arg %q", a)
			}
		}
	}
}

// checkCommon checks what every rendering must hold: one hardened replica, a Service that selects it,
// a writable /tmp, flags the exporter knows.
func checkCommon(t *testing.T, r *rendered) {
	t.Helper()
	checkCommonReplicas(t, r, 1)
}

// checkCommonReplicas is checkCommon for a Deployment of replicas pods.
func checkCommonReplicas(t *testing.T, r *rendered, replicas int32) {
	t.Helper()
	d := r.deployment
	if d.Name != fullname || d.Spec.Replicas == nil || *d.Spec.Replicas != replicas {
		t.Errorf("deployment %s: want %s with replicas %d", d.Name, fullname, replicas)
	}
	if replicas == 1 && len(d.Spec.Template.Spec.TopologySpreadConstraints) != 0 {
		t.Errorf("topology spread constraints %+v on one replica, not asked for", d.Spec.Template.Spec.TopologySpreadConstraints)
	}
	pod := d.Spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the service account token is mounted; the exporter needs no Kubernetes API")
	}
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
		psc.FSGroup == nil || *psc.FSGroup != 65532 {
		t.Errorf("pod security context %+v: want runAsNonRoot, runAsUser and fsGroup 65532", psc)
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("pod seccomp profile is not RuntimeDefault")
	}
	c := r.container(t)
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("root filesystem is not read-only")
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("privilege escalation is allowed")
	}
	if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("capabilities %+v: want drop [ALL] and nothing added", sc)
	}
	if v, ok := r.volume("tmp"); !ok || v.EmptyDir == nil || mountPath(c, "tmp") != "/tmp" {
		t.Error("no emptyDir mounted at /tmp (the root is read-only; the sandbox keeps its state in /tmp)")
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 9871 {
		t.Errorf("ports %+v: want http 9871", c.Ports)
	}
	wantArgs(t, c, "--web.listen-address=:9871")
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		if p == nil {
			t.Fatal("missing liveness or readiness probe")
		}
	}
	checkFlagsKnown(t, c.Args)

	// The Service selects the pod and the Deployment selects its own pods.
	podLabels := d.Spec.Template.Labels
	for k, v := range d.Spec.Selector.MatchLabels {
		if podLabels[k] != v {
			t.Errorf("deployment selector %s=%s does not match the pod's labels %v", k, v, podLabels)
		}
	}
	for k, v := range r.service.Spec.Selector {
		if podLabels[k] != v {
			t.Errorf("service selector %s=%s does not match the pod's labels %v", k, v, podLabels)
		}
	}
	if len(r.service.Spec.Selector) == 0 {
		t.Error("service has no selector")
	}
	sp := r.service.Spec.Ports
	if len(sp) != 1 || sp[0].Name != "http" || sp[0].Port != 9871 || sp[0].TargetPort.String() != "http" {
		t.Errorf("service ports %+v: want http 9871 -> http", sp)
	}
}

func checkHTTPProbes(t *testing.T, c corev1.Container, scheme corev1.URIScheme) {
	t.Helper()
	for _, p := range []struct {
		probe *corev1.Probe
		path  string
	}{{c.LivenessProbe, "/-/healthy"}, {c.ReadinessProbe, "/-/ready"}} {
		g := p.probe.HTTPGet
		if g == nil || g.Path != p.path || g.Port.String() != "http" || g.Scheme != scheme {
			t.Errorf("probe %+v: want GET %s on port http over %s", p.probe.ProbeHandler, p.path, scheme)
		}
	}
}

var (
	exporterOnce   sync.Once
	exporterBinDir string
	exporterBin    string
	exporterFlags  map[string]bool
	exporterErr    error
)

// exporter builds the exporter from this checkout once, and reads its flags.
func exporter(t *testing.T) string {
	t.Helper()
	exporterOnce.Do(func() {
		if exporterBinDir, exporterErr = os.MkdirTemp("", "mintlify_exporter-charttest-"); exporterErr != nil {
			return
		}
		exporterBin = filepath.Join(exporterBinDir, "mintlify_exporter")
		build := exec.Command("go", "build", "-o", exporterBin, ".")
		build.Dir = repoRoot
		if out, err := build.CombinedOutput(); err != nil {
			exporterErr = fmt.Errorf("building the exporter: %v: %s", err, out)
			return
		}
		// The serve command (the default) has flags of its own.
		out, err := exec.Command(exporterBin, "serve", "--help").CombinedOutput()
		if err != nil {
			exporterErr = fmt.Errorf("mintlify_exporter serve --help: %v: %s", err, out)
			return
		}
		exporterFlags = map[string]bool{}
		for _, m := range regexp.MustCompile(`--(\[no-\])?([a-z0-9.-]+)`).FindAllStringSubmatch(string(out), -1) {
			exporterFlags[m[2]] = true
		}
	})
	if exporterErr != nil {
		t.Fatal(exporterErr)
	}
	return exporterBin
}

// checkFlagsKnown fails for an arg that is not a flag of the exporter built from this checkout.
func checkFlagsKnown(t *testing.T, args []string) {
	t.Helper()
	exporter(t)
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !exporterFlags[name] {
			t.Errorf("arg %q is not a flag of mintlify_exporter", a)
		}
	}
}

func TestStrictDecodingRejectsUnknownFields(t *testing.T) {
	// The checks below mean something only if a misspelt field fails.
	doc := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replica: 1\n"
	if err := decodeStrict([]byte(doc), &appsv1.Deployment{}); err == nil {
		t.Fatal("a Deployment with spec.replica decoded without error")
	}
	doc = "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: x\nspec:\n  groups:\n  - name: g\n    rules:\n    - alert: A\n      expr: up\n      fore: 5m\n"
	if err := decodeStrict([]byte(doc), &monitoringv1.PrometheusRule{}); err == nil {
		t.Fatal("a PrometheusRule with a rule field fore decoded without error")
	}
}

// TestChartFilesMatchSources fails when the chart's copies of the rules and dashboards drift from
// alerts/ and dashboards/: run `make chart-files`.
func TestChartFilesMatchSources(t *testing.T) {
	pairs := map[string]string{
		filepath.Join(repoRoot, "alerts", "mintlify.rules.yml"): filepath.Join(chartDir, "files", "alerts", "mintlify.rules.yml"),
	}
	srcDash, _ := filepath.Glob(filepath.Join(repoRoot, "dashboards", "*.json"))
	if len(srcDash) == 0 {
		t.Fatal("no dashboards in dashboards/")
	}
	for _, f := range srcDash {
		pairs[f] = filepath.Join(chartDir, "files", "dashboards", filepath.Base(f))
	}
	for src, cp := range pairs {
		want, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(cp)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is missing or differs from %s: run make chart-files", cp, src)
		}
	}
	var copies []string
	err := filepath.WalkDir(filepath.Join(chartDir, "files"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			copies = append(copies, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range copies {
		found := false
		for _, want := range pairs {
			found = found || filepath.Clean(want) == filepath.Clean(c)
		}
		if !found {
			t.Errorf("%s has no source in alerts/ or dashboards/: run make chart-files", c)
		}
	}
}

// TestRequiresProjectAndKey: without the sandbox, the chart does not render
// without a project or a key (the pod would only crash-loop), and says why.
func TestRequiresProjectAndKey(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "mintlify.projects is empty"},
		{[]string{"--set", "mintlify.apiKey.existingSecret=k"}, "mintlify.projects is empty"},
		{[]string{"--set", "mintlify.projects={docs}"}, "mintlify.apiKey.existingSecret is empty"},
	} {
		_, err := helmTemplate(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "mintlify.sandbox=true") {
			t.Errorf("helm template %v: err = %v, want %q and the sandbox as the way to try it", c.args, err, c.want)
		}
	}
}

// TestDefaultValues renders the defaults with the two values they lack.
func TestDefaultValues(t *testing.T) {
	r := render(t, "--set", "mintlify.projects={docs}", "--set", "mintlify.apiKey.existingSecret=k")
	wantKinds(t, r, "Deployment", "Service", "PersistentVolumeClaim")
	checkCommon(t, r)
	c := r.container(t)
	checkHTTPProbes(t, c, corev1.URISchemeHTTP)
	noArgPrefix(t, c, "--web.enable-agent-api", "--web.config.file", "--mintlify.sandbox", "--config.file")
	for _, name := range []string{"web-config", "config"} {
		if _, ok := r.volume(name); ok {
			t.Errorf("volume %s without the values that ask for it", name)
		}
	}
	checkStateClaim(t, r)
	for _, e := range c.Env {
		if strings.Contains(strings.ToUpper(e.Name), "KEY") {
			t.Errorf("env %s: the key is read from a mounted file, never the environment", e.Name)
		}
	}
	if c.Image != "ghcr.io/mintlify-exporter/mintlify_exporter:v0.1.0" {
		t.Errorf("image %s: want the appVersion's tag", c.Image)
	}
}

func TestGatewayValues(t *testing.T) {
	r := render(t, "-f", filepath.Join(chartDir, "ci", "gateway-values.yaml"))
	dashFiles, _ := filepath.Glob(filepath.Join(repoRoot, "dashboards", "*.json"))
	want := []string{"Deployment", "Service", "PersistentVolumeClaim", "ServiceMonitor", "PrometheusRule"}
	for range dashFiles {
		want = append(want, "ConfigMap")
	}
	wantKinds(t, r, want...)
	checkCommon(t, r)
	d, c := r.deployment, r.container(t)

	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("strategy %q: want Recreate (the state file takes a lock)", d.Spec.Strategy.Type)
	}
	wantArgs(t, c,
		"--web.enable-agent-api",
		"--agent.state-file=/var/lib/mintlify_exporter/agent.db",
		"--web.config.file=/etc/mintlify_exporter/web/web-config.yml",
		"--mintlify.api-key-file=/etc/mintlify_exporter/key/api-key",
		"--mintlify.project=acme-docs", "--mintlify.project=acme-api",
		"--analytics.window=1d", "--analytics.window=7d", "--analytics.timezone=Europe/Berlin")
	noArgPrefix(t, c, "--mintlify.sandbox")

	// State on the claim, the key and the web config from their Secrets.
	if len(r.pvcs) != 1 {
		t.Fatalf("want one PersistentVolumeClaim, got %d", len(r.pvcs))
	}
	pvc := r.pvcs[0]
	if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("claim size %s: want 2Gi", got.String())
	}
	if !slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
		t.Errorf("claim access modes %v: want ReadWriteOnce", pvc.Spec.AccessModes)
	}
	if v, ok := r.volume("state"); !ok || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != pvc.Name {
		t.Errorf("state volume %+v: want the claim %s", v, pvc.Name)
	}
	if mountPath(c, "state") != "/var/lib/mintlify_exporter" {
		t.Error("state volume not mounted at /var/lib/mintlify_exporter")
	}
	for name, secret := range map[string]string{"api-key": "mintlify-api-key", "web-config": "mintlify-web-config"} {
		v, ok := r.volume(name)
		if !ok || v.Secret == nil || v.Secret.SecretName != secret {
			t.Errorf("volume %s: want the Secret %s", name, secret)
		}
	}
	if mountPath(c, "api-key") != "/etc/mintlify_exporter/key" || mountPath(c, "web-config") != "/etc/mintlify_exporter/web" {
		t.Error("key or web config mounted elsewhere than the args say")
	}
	// Basic auth covers the probe paths too: the probes check the port.
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		if p.TCPSocket == nil || p.TCPSocket.Port.String() != "http" || p.HTTPGet != nil {
			t.Errorf("probe %+v: want a TCP check of port http (basic auth on)", p.ProbeHandler)
		}
	}

	// ServiceMonitor: selects the Service, scrapes over HTTPS with basic auth.
	sm := r.serviceMonitors[0]
	for k, v := range sm.Spec.Selector.MatchLabels {
		if r.service.Labels[k] != v {
			t.Errorf("ServiceMonitor selector %s=%s does not match the Service's labels", k, v)
		}
	}
	if sm.Labels["release"] != "kube-prometheus-stack" {
		t.Errorf("ServiceMonitor labels %v lack release: kube-prometheus-stack", sm.Labels)
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("want one endpoint, got %d", len(sm.Spec.Endpoints))
	}
	ep := sm.Spec.Endpoints[0]
	if ep.Port != "http" || ep.Path != "/metrics" || ep.Scheme == nil || strings.ToLower(ep.Scheme.String()) != "https" ||
		ep.Interval != "30s" || ep.ScrapeTimeout != "30s" {
		t.Errorf("endpoint %+v: want https /metrics on port http every 30s with a 30s timeout", ep)
	}
	if ep.BasicAuth == nil || ep.BasicAuth.Username.Name != "mintlify-scrape-auth" || ep.BasicAuth.Username.Key != "username" ||
		ep.BasicAuth.Password.Name != "mintlify-scrape-auth" || ep.BasicAuth.Password.Key != "password" {
		t.Errorf("endpoint basic auth %+v: want the Secret mintlify-scrape-auth", ep.BasicAuth)
	}

	// PrometheusRule: exactly the rule file.
	data, err := os.ReadFile(filepath.Join(repoRoot, "alerts", "mintlify.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var spec monitoringv1.PrometheusRuleSpec
	if err := decodeStrict(data, &spec); err != nil {
		t.Fatalf("alerts/mintlify.rules.yml does not decode strictly as a PrometheusRule spec: %v", err)
	}
	pr := r.prometheusRules[0]
	if !reflect.DeepEqual(pr.Spec, spec) {
		t.Error("the PrometheusRule's spec differs from alerts/mintlify.rules.yml")
	}
	alerts := 0
	for _, g := range pr.Spec.Groups {
		for _, rule := range g.Rules {
			if rule.Alert != "" {
				alerts++
				if rule.Labels["severity"] == "" || rule.Annotations["runbook_url"] == "" {
					t.Errorf("alert %s lacks severity or runbook_url", rule.Alert)
				}
			}
		}
	}
	if alerts == 0 {
		t.Error("the PrometheusRule has no alerts")
	}
	if pr.Labels["release"] != "kube-prometheus-stack" {
		t.Errorf("PrometheusRule labels %v lack release: kube-prometheus-stack", pr.Labels)
	}

	// Dashboards: one ConfigMap each, for the Grafana sidecar, holding the file as it is.
	byKey := map[string]*corev1.ConfigMap{}
	for _, cm := range r.configMaps {
		if cm.Labels["grafana_dashboard"] != "1" || cm.Annotations["grafana_folder"] != "Mintlify" {
			t.Errorf("ConfigMap %s: labels %v, annotations %v: want grafana_dashboard: \"1\" and the folder", cm.Name, cm.Labels, cm.Annotations)
		}
		if len(cm.Data) != 1 {
			t.Errorf("ConfigMap %s holds %d keys, want one dashboard", cm.Name, len(cm.Data))
		}
		for k := range cm.Data {
			byKey[k] = cm
		}
	}
	for _, f := range dashFiles {
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cm, ok := byKey[filepath.Base(f)]
		if !ok {
			t.Errorf("no ConfigMap holds %s", filepath.Base(f))
			continue
		}
		got := cm.Data[filepath.Base(f)]
		if got != string(want) {
			t.Errorf("ConfigMap %s: %s differs from dashboards/", cm.Name, filepath.Base(f))
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("ConfigMap %s: %s is not JSON", cm.Name, filepath.Base(f))
		}
	}
}

func TestGatewayRequiresWebConfig(t *testing.T) {
	_, err := helmTemplate("--set", "gateway.enabled=true", "--set", "mintlify.projects={docs}",
		"--set", "mintlify.apiKey.existingSecret=k")
	if err == nil || !strings.Contains(err.Error(), "webConfig.existingSecret") {
		t.Fatalf("the gateway rendered without a web config (basic auth); err = %v", err)
	}
}

// checkLedgerVolume: the root filesystem is read-only, so the state
// directory, where every organization's analytics ledger is written before
// each request, is a volume (an emptyDir without the gateway's claim).
func checkLedgerVolume(t *testing.T, r *rendered) {
	t.Helper()
	c := r.container(t)
	wantArgs(t, c, "--agent.state-file=/var/lib/mintlify_exporter/agent.db")
	if v, ok := r.volume("state"); !ok || v.EmptyDir == nil || mountPath(c, "state") != "/var/lib/mintlify_exporter" {
		t.Errorf("state volume %+v: want an emptyDir at /var/lib/mintlify_exporter for the analytics ledger", v)
	}
	if len(r.pvcs) != 0 {
		t.Errorf("a claim, where the state needs none (no gateway persistence, or the cluster keeps it in Redis)")
	}
}

// checkStateClaim: without the cluster the state directory (the analytics
// snapshots, the ledger, the job state) is on the chart's claim, by
// default with or without the gateway, and the pod is replaced with
// strategy Recreate: the old pod releases the state file and the
// ReadWriteOnce claim before the new one opens them.
func checkStateClaim(t *testing.T, r *rendered) {
	t.Helper()
	c := r.container(t)
	wantArgs(t, c, "--agent.state-file=/var/lib/mintlify_exporter/agent.db")
	if len(r.pvcs) != 1 {
		t.Fatalf("%d claims, want one for the state directory", len(r.pvcs))
	}
	if v, ok := r.volume("state"); !ok || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != r.pvcs[0].Name ||
		mountPath(c, "state") != "/var/lib/mintlify_exporter" {
		t.Errorf("state volume %+v: want the claim %s at /var/lib/mintlify_exporter", v, r.pvcs[0].Name)
	}
	if r.deployment.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("strategy %q with the state on a claim: want Recreate", r.deployment.Spec.Strategy.Type)
	}
}

// TestPersistenceOff: persistence.enabled=false, or the former
// gateway.persistence.enabled=false, keeps the state on an emptyDir, and
// the default rolling update.
func TestPersistenceOff(t *testing.T) {
	for _, key := range []string{"persistence.enabled=false", "gateway.persistence.enabled=false"} {
		r := render(t, "--set", "mintlify.projects={docs}", "--set", "mintlify.apiKey.existingSecret=k", "--set", key)
		wantKinds(t, r, "Deployment", "Service")
		checkLedgerVolume(t, r)
		if r.deployment.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
			t.Errorf("%s: strategy Recreate without a claim or the gateway", key)
		}
	}
}

// configFile is the rendered configuration file's ConfigMap and content.
func (r *rendered) configFile(t *testing.T) (*corev1.ConfigMap, string) {
	t.Helper()
	for _, cm := range r.configMaps {
		if cm.Name == fullname+"-config" {
			if len(cm.Data) != 1 || cm.Data["mintlify.yml"] == "" {
				t.Fatalf("ConfigMap %s: want one key, mintlify.yml; got %v", cm.Name, cm.Data)
			}
			return cm, cm.Data["mintlify.yml"]
		}
	}
	t.Fatalf("no ConfigMap %s-config", fullname)
	return nil, ""
}

// TestConfigFileValues renders the configuration file route: the file in
// a ConfigMap that `mintlify_exporter config check` accepts, mounted and
// passed as --config.file instead of the per-project flags, each
// organization's key Secret mounted where the file says, and a checksum of
// the file on the pod template so that a change rolls the pod.
func TestConfigFileValues(t *testing.T) {
	values := filepath.Join(chartDir, "ci", "config-values.yaml")
	r := render(t, "-f", values)
	wantKinds(t, r, "Deployment", "Service", "ConfigMap", "PersistentVolumeClaim")
	checkCommon(t, r)
	checkStateClaim(t, r)
	c := r.container(t)
	wantArgs(t, c, "--config.file=/etc/mintlify_exporter/config/mintlify.yml")
	noArgPrefix(t, c, "--mintlify.project", "--mintlify.api-key-file", "--analytics.window", "--analytics.timezone", "--mintlify.sandbox")
	cm, file := r.configFile(t)
	if v, ok := r.volume("config"); !ok || v.ConfigMap == nil || v.ConfigMap.Name != cm.Name || mountPath(c, "config") != "/etc/mintlify_exporter/config" {
		t.Errorf("config volume %+v: want the ConfigMap %s at /etc/mintlify_exporter/config", v, cm.Name)
	}

	// The file is valid, and says what the values say.
	path := filepath.Join(t.TempDir(), "mintlify.yml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exporter(t), "config", "check", "--config.file="+path).CombinedOutput()
	if err != nil {
		t.Fatalf("config check of the rendered file: %v\n%s\n%s", err, out, file)
	}
	for _, want := range []string{"2 organization(s), 3 project(s)", "organization acme: key from file /etc/mintlify_exporter/keys/acme/api-key, analytics budget 40",
		"  key expires 2027-02-24T00:00:00Z\n",
		"organization globex: key from file /etc/mintlify_exporter/keys/globex/key, analytics budget 60",
		"project acme-docs: windows 1d 7d 30d:6h, timezone Europe/Berlin, paths include ^/guides/, at most 500, sources visitors views feedback searches, agent jobs on",
		"project globex-docs: windows 1d 7d, timezone America/New_York"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("config check of the rendered file lacks %q:\n%s", want, out)
		}
	}

	// Each key file the file names is in its organization's Secret, mounted there.
	var parsed struct {
		Organizations []struct {
			Name       string `json:"name"`
			APIKeyFile string `json:"api_key_file"`
		} `json:"organizations"`
	}
	if err := yaml.Unmarshal([]byte(file), &parsed); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{"acme": "mintlify-acme-key", "globex": "mintlify-globex-key"}
	for _, o := range parsed.Organizations {
		found := false
		for _, m := range c.VolumeMounts {
			rel, ok := strings.CutPrefix(o.APIKeyFile, m.MountPath+"/")
			if !ok || strings.Contains(rel, "/") {
				continue
			}
			v, _ := r.volume(m.Name)
			found = v.Secret != nil && v.Secret.SecretName == secrets[o.Name] && m.ReadOnly
			if !found {
				t.Errorf("organization %s: %s is in volume %s, want the Secret %s read-only", o.Name, o.APIKeyFile, m.Name, secrets[o.Name])
			}
			found = true
		}
		if !found {
			t.Errorf("organization %s: no volume mounted at %s", o.Name, filepath.Dir(o.APIKeyFile))
		}
	}
	for _, e := range c.Env {
		if strings.Contains(strings.ToUpper(e.Name), "KEY") {
			t.Errorf("env %s: keys are read from mounted files, never the environment", e.Name)
		}
	}

	// The checksum is the file's, and follows it.
	sum := r.deployment.Spec.Template.Annotations["checksum/config"]
	if want := fmt.Sprintf("%x", sha256.Sum256([]byte(strings.TrimSuffix(file, "\n")))); sum != want {
		t.Errorf("checksum/config = %q, want the file's sha256 %s", sum, want)
	}
	changed := render(t, "-f", values, "--set", "config.projects[1].windows={7d}")
	if _, f := changed.configFile(t); f == file || changed.deployment.Spec.Template.Annotations["checksum/config"] == sum {
		t.Error("a changed project does not change the file and its checksum: the pod would not roll")
	}
	same := render(t, "-f", values, "--set", "resources.requests.cpu=20m")
	if same.deployment.Spec.Template.Annotations["checksum/config"] != sum {
		t.Error("the checksum changed with a value outside the file")
	}
}

// TestConfigFileValuesRefusals: the chart fails with a message naming the
// values to fix rather than render a pod that cannot start.
func TestConfigFileValuesRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"both routes":     {[]string{"--set", "config.projects[0].id=p", "--set", "config.organizations[0].name=a", "--set", "config.organizations[0].existingSecret=s", "--set", "mintlify.projects={p}"}, "not both"},
		"no organization": {[]string{"--set", "config.projects[0].id=p"}, "config.organizations"},
		"no key Secret":   {[]string{"--set", "config.projects[0].id=p", "--set", "config.organizations[0].name=a"}, "existingSecret"},
	} {
		if _, err := helmTemplate(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one naming %q", name, err, tc.want)
		}
	}
	// The sandbox reads no key: no Secret needed.
	r := render(t, "--set", "mintlify.sandbox=true", "--set", "config.projects[0].id=p", "--set", "config.organizations[0].name=a")
	c := r.container(t)
	wantArgs(t, c, "--mintlify.sandbox", "--config.file=/etc/mintlify_exporter/config/mintlify.yml")
	if _, ok := r.volume("key-0"); ok {
		t.Error("a key volume on the sandbox")
	}
}

func TestSandboxGateway(t *testing.T) {
	// The sandbox's simulated jobs die with it: no claim, no state file; its temporary state goes to /tmp.
	r := render(t, "--set", "mintlify.sandbox=true", "--set", "gateway.enabled=true")
	wantKinds(t, r, "Deployment", "Service")
	checkCommon(t, r)
	c := r.container(t)
	wantArgs(t, c, "--mintlify.sandbox", "--web.enable-agent-api")
	noArgPrefix(t, c, "--agent.state-file", "--mintlify.api-key-file", "--web.config.file")
	if r.deployment.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Error("gateway without strategy Recreate")
	}
	checkHTTPProbes(t, c, corev1.URISchemeHTTP)
}

func TestGatewayWithoutPersistence(t *testing.T) {
	r := render(t, "--set", "gateway.enabled=true", "--set", "gateway.persistence.enabled=false",
		"--set", "mintlify.projects={docs}", "--set", "mintlify.apiKey.existingSecret=k",
		"--set", "webConfig.existingSecret=w", "--set", "webConfig.tls=true")
	wantKinds(t, r, "Deployment", "Service")
	checkCommon(t, r)
	c := r.container(t)
	if v, ok := r.volume("state"); !ok || v.EmptyDir == nil {
		t.Errorf("state volume %+v: want an emptyDir", v)
	}
	wantArgs(t, c, "--agent.state-file=/var/lib/mintlify_exporter/agent.db", "--mintlify.project=docs")
	checkHTTPProbes(t, c, corev1.URISchemeHTTPS)
}

func TestExistingClaim(t *testing.T) {
	r := render(t, "-f", filepath.Join(chartDir, "ci", "gateway-values.yaml"), "--set", "gateway.persistence.existingClaim=old-state")
	if len(r.pvcs) != 0 {
		t.Errorf("a claim was created although existingClaim is set")
	}
	if v, ok := r.volume("state"); !ok || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "old-state" {
		t.Errorf("state volume %+v: want the claim old-state", v)
	}
}

// The message of the refusal of replicas without the cluster, as chart-check.sh also checks it.
const replicasNeedClusterMsg = "replicaCount=2 needs cluster.redis.address: without a shared Redis each replica pays its analytics requests " +
	"from a budget of its own, together spending the organization's 100 requests per hour several times over, and keeps its own state files; " +
	"set cluster.redis.address to an existing Redis or Valkey (the chart installs none), or replicaCount=1"

// TestReplicasNeedCluster: several replicas without a shared Redis would each spend the
// organization's budget and keep their own state; the chart refuses them and says why. So it does
// for the gateway on several replicas with web TLS (they forward /api/ to the one running it over
// plain HTTP), and for cluster settings the exporter would refuse at start.
func TestReplicasNeedCluster(t *testing.T) {
	flagRoute := []string{"--set", "mintlify.projects={docs}", "--set", "mintlify.apiKey.existingSecret=k"}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no cluster":                      {append([]string{"--set", "replicaCount=2"}, flagRoute...), replicasNeedClusterMsg},
		"no cluster, sandbox":             {[]string{"--set", "replicaCount=2", "--set", "mintlify.sandbox=true"}, replicasNeedClusterMsg},
		"no cluster, config":              {[]string{"-f", filepath.Join(chartDir, "ci", "config-values.yaml"), "--set", "replicaCount=2"}, replicasNeedClusterMsg},
		"only a password":                 {append([]string{"--set", "replicaCount=2", "--set", "cluster.redis.passwordSecret.name=p"}, flagRoute...), "needs cluster.redis.address"},
		"password, no address":            {append([]string{"--set", "cluster.redis.passwordSecret.name=p"}, flagRoute...), "cluster.redis settings without cluster.redis.address"},
		"address without a port":          {append([]string{"--set", "cluster.redis.address=redis"}, flagRoute...), "want host:port"},
		"CA without TLS":                  {append([]string{"--set", "cluster.redis.address=redis:6379", "--set", "cluster.redis.tls.caSecret.name=ca"}, flagRoute...), "cluster.redis.tls.enabled=true"},
		"gateway on replicas, no cluster": {[]string{"-f", filepath.Join(chartDir, "ci", "gateway-values.yaml"), "--set", "replicaCount=2"}, replicasNeedClusterMsg},
		"gateway on replicas, web TLS": {[]string{"-f", filepath.Join(chartDir, "ci", "gateway-values.yaml"), "--set", "replicaCount=2", "--set", "cluster.redis.address=redis:6379"},
			"replicaCount=2 with gateway.enabled and webConfig.tls: the replicas forward agent job requests to the one running the gateway over plain HTTP"},
		"gateway on replicas, web TLS, config": {[]string{"-f", filepath.Join(chartDir, "ci", "config-values.yaml"), "--set", "replicaCount=3", "--set", "cluster.redis.address=redis:6379",
			"--set", "gateway.enabled=true", "--set", "webConfig.existingSecret=w", "--set", "webConfig.tls=true"}, "replicaCount=3 with gateway.enabled and webConfig.tls"},
	} {
		_, err := helmTemplate(tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
}

// checkReplicated checks what several replicas need beside the cluster settings: a rolling update
// (no Recreate: the state files are the pod's own), a PodDisruptionBudget selecting the pods, an
// emptyDir for the local state (never a ReadWriteOnce claim), and spreading over nodes.
func checkReplicated(t *testing.T, r *rendered, replicas int32) {
	t.Helper()
	checkCommonReplicas(t, r, replicas)
	d := r.deployment
	if s := d.Spec.Strategy; s.Type != appsv1.RollingUpdateDeploymentStrategyType || s.RollingUpdate == nil ||
		s.RollingUpdate.MaxUnavailable == nil || s.RollingUpdate.MaxUnavailable.String() != "0" {
		t.Errorf("strategy %+v: want RollingUpdate with maxUnavailable 0", s)
	}
	if len(r.pdbs) != 1 {
		t.Fatalf("want one PodDisruptionBudget, got %d", len(r.pdbs))
	}
	pdb := r.pdbs[0]
	if pdb.Name != fullname || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.String() != "1" || pdb.Spec.MinAvailable != nil {
		t.Errorf("PodDisruptionBudget %s %+v: want %s with maxUnavailable 1", pdb.Name, pdb.Spec, fullname)
	}
	if pdb.Spec.Selector == nil || !reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("PodDisruptionBudget selector %+v: want the Deployment's %v", pdb.Spec.Selector, d.Spec.Selector.MatchLabels)
	}
	checkLedgerVolume(t, r)
	tsc := d.Spec.Template.Spec.TopologySpreadConstraints
	if len(tsc) != 1 || tsc[0].TopologyKey != "kubernetes.io/hostname" || tsc[0].WhenUnsatisfiable != corev1.ScheduleAnyway ||
		tsc[0].LabelSelector == nil || !reflect.DeepEqual(tsc[0].LabelSelector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("topology spread %+v: want the pods spread over nodes where possible", tsc)
	}
}

// checkSecretMount: the Secret secret is mounted read-only at dir, holding the file file.
func checkSecretMount(t *testing.T, r *rendered, volume, secret, dir string) {
	t.Helper()
	c := r.container(t)
	v, ok := r.volume(volume)
	if !ok || v.Secret == nil || v.Secret.SecretName != secret {
		t.Errorf("volume %s %+v: want the Secret %s", volume, v, secret)
	}
	for _, m := range c.VolumeMounts {
		if m.Name == volume && (m.MountPath != dir || !m.ReadOnly) {
			t.Errorf("volume %s mounted at %s (read-only %v), want %s read-only", volume, m.MountPath, m.ReadOnly, dir)
		}
	}
	if mountPath(c, volume) == "" {
		t.Errorf("volume %s is not mounted", volume)
	}
}

// TestHAValues renders ci/ha-values.yaml: two replicas of the flag route with the cluster as
// --cluster.redis-* flags, the password and the CA mounted from their Secrets.
func TestHAValues(t *testing.T) {
	r := render(t, "-f", filepath.Join(chartDir, "ci", "ha-values.yaml"))
	wantKinds(t, r, "Deployment", "Service", "PodDisruptionBudget", "ServiceMonitor")
	checkReplicated(t, r, 2)
	c := r.container(t)
	wantArgs(t, c,
		"--cluster.redis-address=valkey.cache.svc.cluster.local:6380",
		"--cluster.redis-password-file=/etc/mintlify_exporter/redis/password",
		"--cluster.redis-db=3",
		"--cluster.redis-key-prefix=mintlify_exporter:acme:",
		"--cluster.redis-tls",
		"--cluster.redis-tls-ca-file=/etc/mintlify_exporter/redis-ca/ca.crt",
		"--mintlify.project=acme-docs", "--mintlify.api-key-file=/etc/mintlify_exporter/key/api-key")
	noArgPrefix(t, c, "--config.file", "--web.enable-agent-api", "--cluster.redis-tls-cert-file", "--cluster.redis-username")
	checkSecretMount(t, r, "redis-password", "mintlify-redis", "/etc/mintlify_exporter/redis")
	checkSecretMount(t, r, "redis-ca", "mintlify-redis-ca", "/etc/mintlify_exporter/redis-ca")
	if _, ok := r.volume("redis-client"); ok {
		t.Error("a client certificate volume without clientCertSecret")
	}
	for _, e := range c.Env {
		if strings.Contains(strings.ToUpper(e.Name), "PASS") {
			t.Errorf("env %s: the Redis password is read from a mounted file, never the environment", e.Name)
		}
	}
	// The ServiceMonitor scrapes the Service's endpoints, so every replica.
	if len(r.serviceMonitors) != 1 || len(r.serviceMonitors[0].Spec.Endpoints) != 1 || r.serviceMonitors[0].Spec.Endpoints[0].Port != "http" {
		t.Error("want a ServiceMonitor scraping port http of every pod")
	}

	// A PodDisruptionBudget by minAvailable, and none when turned off or on one replica.
	r = render(t, "-f", filepath.Join(chartDir, "ci", "ha-values.yaml"), "--set", "replicaCount=3", "--set", "podDisruptionBudget.minAvailable=2")
	if len(r.pdbs) != 1 || r.pdbs[0].Spec.MinAvailable == nil || r.pdbs[0].Spec.MinAvailable.String() != "2" || r.pdbs[0].Spec.MaxUnavailable != nil {
		t.Errorf("PodDisruptionBudget %+v: want minAvailable 2 alone", r.pdbs)
	}
	checkCommonReplicas(t, r, 3)
	r = render(t, "-f", filepath.Join(chartDir, "ci", "ha-values.yaml"), "--set", "podDisruptionBudget.enabled=false")
	wantKinds(t, r, "Deployment", "Service", "ServiceMonitor")
	// One replica with the cluster: the flags, no PodDisruptionBudget, the defaults' strategy.
	r = render(t, "-f", filepath.Join(chartDir, "ci", "ha-values.yaml"), "--set", "replicaCount=1")
	wantKinds(t, r, "Deployment", "Service", "ServiceMonitor")
	checkCommon(t, r)
	wantArgs(t, r.container(t), "--cluster.redis-address=valkey.cache.svc.cluster.local:6380")
	if r.deployment.Spec.Strategy.Type != "" {
		t.Errorf("strategy %q on one replica without the gateway: want the default", r.deployment.Spec.Strategy.Type)
	}

	// Every cluster setting, as flags the exporter knows (checkCommon checks each flag).
	r = render(t, "-f", filepath.Join(chartDir, "ci", "ha-values.yaml"),
		"--set", "cluster.redis.username=exporter", "--set", "cluster.redis.timeout=3s",
		"--set", "cluster.redis.tls.clientCertSecret.name=mintlify-redis-client", "--set", "cluster.redis.tls.serverName=redis.internal",
		"--set", "cluster.redis.tls.insecureSkipVerify=true")
	checkReplicated(t, r, 2)
	wantArgs(t, r.container(t), "--cluster.redis-username=exporter", "--cluster.redis-timeout=3s",
		"--cluster.redis-tls-cert-file=/etc/mintlify_exporter/redis-client/tls.crt",
		"--cluster.redis-tls-key-file=/etc/mintlify_exporter/redis-client/tls.key",
		"--cluster.redis-tls-server-name=redis.internal", "--cluster.redis-tls-insecure-skip-verify")
	checkSecretMount(t, r, "redis-client", "mintlify-redis-client", "/etc/mintlify_exporter/redis-client")
}

// TestHAConfigFile: on the configuration file route the cluster is the file's cluster: section (the
// exporter refuses --cluster.* flags beside --config.file), which config check accepts, with the
// password file where its Secret is mounted.
func TestHAConfigFile(t *testing.T) {
	values := filepath.Join(chartDir, "ci", "config-values.yaml")
	r := render(t, "-f", values, "--set", "replicaCount=2", "--set", "cluster.redis.address=redis.cache:6379",
		"--set", "cluster.redis.passwordSecret.name=mintlify-redis", "--set", "cluster.redis.passwordSecret.key=redis-password",
		"--set", "cluster.redis.db=1", "--set", "cluster.redis.timeout=5s",
		"--set", "cluster.redis.tls.enabled=true", "--set", "cluster.redis.tls.caSecret.name=redis-ca", "--set", "cluster.redis.tls.caSecret.key=ca.pem")
	wantKinds(t, r, "Deployment", "Service", "ConfigMap", "PodDisruptionBudget")
	checkReplicated(t, r, 2)
	c := r.container(t)
	noArgPrefix(t, c, "--cluster.")
	wantArgs(t, c, "--config.file=/etc/mintlify_exporter/config/mintlify.yml")
	_, file := r.configFile(t)
	var parsed struct {
		Cluster map[string]any `json:"cluster"`
	}
	if err := yaml.Unmarshal([]byte(file), &parsed); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"address": "redis.cache:6379", "password_file": "/etc/mintlify_exporter/redis/redis-password", "db": float64(1),
		"timeout": "5s", "tls": map[string]any{"enabled": true, "ca_file": "/etc/mintlify_exporter/redis-ca/ca.pem"}}
	if !reflect.DeepEqual(parsed.Cluster, want) {
		t.Errorf("cluster section %v, want %v:\n%s", parsed.Cluster, want, file)
	}
	checkSecretMount(t, r, "redis-password", "mintlify-redis", "/etc/mintlify_exporter/redis")
	checkSecretMount(t, r, "redis-ca", "redis-ca", "/etc/mintlify_exporter/redis-ca")
	path := filepath.Join(t.TempDir(), "mintlify.yml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(exporter(t), "config", "check", "--config.file="+path).CombinedOutput(); err != nil {
		t.Fatalf("config check of the rendered file: %v\n%s\n%s", err, out, file)
	}
	// A changed cluster setting rolls the pods: a reload cannot change the cluster section.
	base, _ := r.configFile(t)
	other := render(t, "-f", values, "--set", "replicaCount=2", "--set", "cluster.redis.address=redis.cache:6380")
	if o, _ := other.configFile(t); o.Data["mintlify.yml"] == base.Data["mintlify.yml"] ||
		other.deployment.Spec.Template.Annotations["checksum/config"] == r.deployment.Spec.Template.Annotations["checksum/config"] {
		t.Error("another cluster address does not change the file's checksum: the pods would not roll")
	}
}

// TestHAGateway renders ci/ha-gateway-values.yaml: the agent job gateway on two replicas sharing a
// Redis. One replica at a time runs it on the job state in Redis and the others forward /api/ to it at
// the URL it advertises, by default its first non-loopback address (in a pod: the pod IP) and the
// listen port, so the chart sets no --cluster.advertise-url (nor cluster.advertise_url in the one
// ConfigMap every pod reads). No claim on one replica or several (the jobs and the ledger are in
// Redis; a ReadWriteOnce claim would not mount on two nodes): the state directory is an emptyDir.
func TestHAGateway(t *testing.T) {
	values := filepath.Join(chartDir, "ci", "ha-gateway-values.yaml")
	r := render(t, "-f", values)
	wantKinds(t, r, "Deployment", "Service", "PodDisruptionBudget", "ServiceMonitor")
	checkReplicated(t, r, 2) // a rolling update, the PodDisruptionBudget, an emptyDir and no claim
	c := r.container(t)
	wantArgs(t, c, "--web.enable-agent-api", "--web.config.file=/etc/mintlify_exporter/web/web-config.yml",
		"--agent.state-file=/var/lib/mintlify_exporter/agent.db",
		"--cluster.redis-address=valkey.cache.svc.cluster.local:6379",
		"--cluster.redis-password-file=/etc/mintlify_exporter/redis/password",
		"--cluster.forward-secret-file=/etc/mintlify_exporter/forward/secret")
	noArgPrefix(t, c, "--cluster.advertise-url", "--mintlify.sandbox")
	checkSecretMount(t, r, "web-config", "mintlify-web-config", "/etc/mintlify_exporter/web")
	checkSecretMount(t, r, "redis-password", "mintlify-redis", "/etc/mintlify_exporter/redis")
	checkSecretMount(t, r, "forward-secret", "mintlify-forward", "/etc/mintlify_exporter/forward")
	// Without the forward secret the gateway on the cluster does not render.
	if _, err := helmTemplate("-f", values, "--set", "cluster.forwardSecret.existingSecret="); err == nil ||
		!strings.Contains(err.Error(), "cluster.forwardSecret.existingSecret") {
		t.Errorf("the gateway on the cluster without a forward secret: %v, want refused naming cluster.forwardSecret.existingSecret", err)
	}
	// The replicas reach each other on the listen port, the container port (no hostNetwork, which
	// would make the default address the node's).
	if r.deployment.Spec.Template.Spec.HostNetwork {
		t.Error("hostNetwork: the default advertise URL would be the node's address")
	}
	if len(c.Ports) != 1 || fmt.Sprintf(":%d", c.Ports[0].ContainerPort) != strings.TrimPrefix(c.Args[0], "--web.listen-address=") {
		t.Errorf("ports %+v, args %q: want the container port to be the listen port", c.Ports, c.Args)
	}

	// Persistence asked for, or an existing claim named: still no claim with the cluster.
	for _, args := range [][]string{
		{"--set", "gateway.persistence.existingClaim=old-state"},
		{"--set", "gateway.persistence.size=5Gi", "--set", "gateway.persistence.storageClassName=fast"},
	} {
		r := render(t, append([]string{"-f", values}, args...)...)
		wantKinds(t, r, "Deployment", "Service", "PodDisruptionBudget", "ServiceMonitor")
		checkReplicated(t, r, 2)
	}

	// The configuration file route: the cluster section as ever, without advertise_url.
	cfg := render(t, "-f", filepath.Join(chartDir, "ci", "config-values.yaml"), "--set", "replicaCount=2",
		"--set", "cluster.redis.address=redis.cache:6379", "--set", "gateway.enabled=true",
		"--set", "webConfig.existingSecret=w", "--set", "webConfig.basicAuth=true", "--set", "cluster.forwardSecret.existingSecret=f")
	wantKinds(t, cfg, "Deployment", "Service", "ConfigMap", "PodDisruptionBudget")
	checkReplicated(t, cfg, 2)
	cc := cfg.container(t)
	wantArgs(t, cc, "--web.enable-agent-api", "--config.file=/etc/mintlify_exporter/config/mintlify.yml")
	noArgPrefix(t, cc, "--cluster.")
	_, file := cfg.configFile(t)
	var parsed struct {
		Cluster map[string]any `json:"cluster"`
	}
	if err := yaml.Unmarshal([]byte(file), &parsed); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"address": "redis.cache:6379", "forward_secret_file": "/etc/mintlify_exporter/forward/secret"}; !reflect.DeepEqual(parsed.Cluster, want) {
		t.Errorf("cluster section %v, want %v", parsed.Cluster, want)
	}
	path := filepath.Join(t.TempDir(), "mintlify.yml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(exporter(t), "config", "check", "--config.file="+path).CombinedOutput(); err != nil {
		t.Fatalf("config check of the rendered file: %v\n%s\n%s", err, out, file)
	}

	// One replica with the cluster: no claim either, and the default rolling update (the new pod
	// forwards to the old one until it takes the gateway over)...
	one := render(t, "-f", values, "--set", "replicaCount=1")
	wantKinds(t, one, "Deployment", "Service", "ServiceMonitor")
	checkCommon(t, one)
	checkLedgerVolume(t, one)
	wantArgs(t, one.container(t), "--web.enable-agent-api")
	if one.deployment.Spec.Strategy.Type != "" {
		t.Errorf("strategy %q on one replica with the cluster: want the default", one.deployment.Spec.Strategy.Type)
	}
	// ... but with web TLS, Recreate: a second pod would forward to the first over plain HTTP.
	tls := render(t, "-f", filepath.Join(chartDir, "ci", "gateway-values.yaml"), "--set", "cluster.redis.address=redis:6379",
		"--set", "cluster.forwardSecret.existingSecret=f")
	checkCommon(t, tls)
	checkLedgerVolume(t, tls)
	if tls.deployment.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("strategy %q on one replica with the cluster and web TLS: want Recreate", tls.deployment.Spec.Strategy.Type)
	}
}

// TestNoPDBOnOneReplica: the renderings of one replica have no PodDisruptionBudget (on one pod it
// either protects nothing or blocks node drains) and keep their strategy.
func TestNoPDBOnOneReplica(t *testing.T) {
	for _, args := range [][]string{
		{"-f", filepath.Join(chartDir, "ci", "sandbox-values.yaml")},
		{"-f", filepath.Join(chartDir, "ci", "gateway-values.yaml")},
		{"-f", filepath.Join(chartDir, "ci", "config-values.yaml")},
	} {
		r := render(t, args...)
		if len(r.pdbs) != 0 {
			t.Errorf("%v: a PodDisruptionBudget on one replica", args)
		}
		checkCommon(t, r)
		noArgPrefix(t, r.container(t), "--cluster.")
	}
}

// TestKeyExpiryValue: mintlify.apiKey.expires is the flag route's
// --mintlify.api-key-expires, a flag of the exporter; left empty, no flag.
func TestKeyExpiryValue(t *testing.T) {
	base := []string{"--set", "mintlify.projects={docs}", "--set", "mintlify.apiKey.existingSecret=k"}
	c := render(t, append(base, "--set", "mintlify.apiKey.expires=2027-02-24")...).container(t)
	if !slices.Contains(c.Args, "--mintlify.api-key-expires=2027-02-24") {
		t.Errorf("args %v lack --mintlify.api-key-expires=2027-02-24", c.Args)
	}
	if exporter(t); !exporterFlags["mintlify.api-key-expires"] {
		t.Error("--mintlify.api-key-expires is not a flag of mintlify_exporter")
	}
	noArgPrefix(t, render(t, base...).container(t), "--mintlify.api-key-expires")
}

// TestHASentinel renders replicas on a Redis that Sentinel fails over: on the flag route the
// --cluster.redis-sentinel-* and --cluster.redis-wait-* flags, on the config route the file's
// cluster.sentinel section (which the exporter's config check accepts), the sentinels' password
// from a Secret; an address beside a master name, or a master name without sentinels, is refused.
func TestHASentinel(t *testing.T) {
	sentinel := []string{"--set", "replicaCount=2", "--set", "cluster.redis.sentinel.masterName=mintlify",
		"--set", "cluster.redis.sentinel.addresses={s0.redis:26379,s1.redis:26379,s2.redis:26379}",
		"--set", "cluster.redis.sentinel.passwordSecret.name=sentinel-pw",
		"--set", "cluster.redis.waitReplicas=1", "--set", "cluster.redis.waitTimeout=500ms"}
	r := render(t, append([]string{"--set", "mintlify.projects={acme-docs}", "--set", "mintlify.apiKey.existingSecret=k"}, sentinel...)...)
	checkReplicated(t, r, 2)
	wantArgs(t, r.container(t), "--cluster.redis-sentinel-master-name=mintlify", "--cluster.redis-sentinel-address=s0.redis:26379",
		"--cluster.redis-sentinel-address=s2.redis:26379", "--cluster.redis-sentinel-password-file=/etc/mintlify_exporter/redis-sentinel/password",
		"--cluster.redis-wait-replicas=1", "--cluster.redis-wait-timeout=500ms")
	checkSecretMount(t, r, "redis-sentinel-password", "sentinel-pw", "/etc/mintlify_exporter/redis-sentinel")

	r = render(t, append([]string{"-f", filepath.Join(chartDir, "ci", "config-values.yaml")}, sentinel...)...)
	_, file := r.configFile(t)
	var parsed struct {
		Cluster map[string]any `json:"cluster"`
	}
	if err := yaml.Unmarshal([]byte(file), &parsed); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"sentinel": map[string]any{"master_name": "mintlify", "addresses": []any{"s0.redis:26379", "s1.redis:26379", "s2.redis:26379"},
		"password_file": "/etc/mintlify_exporter/redis-sentinel/password"}, "wait_replicas": float64(1), "wait_timeout": "500ms"}
	if !reflect.DeepEqual(parsed.Cluster, want) {
		t.Errorf("cluster section %v, want %v:\n%s", parsed.Cluster, want, file)
	}
	path := filepath.Join(t.TempDir(), "mintlify.yml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(exporter(t), "config", "check", "--config.file="+path).CombinedOutput(); err != nil {
		t.Fatalf("config check of the rendered file: %v\n%s\n%s", err, out, file)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "cluster.redis.address=r:6379"}, "give one"},
		{[]string{"--set", "cluster.redis.sentinel.addresses=null"}, "needs cluster.redis.sentinel.addresses"},
		{[]string{"--set", "cluster.redis.sentinel.addresses={s0}"}, "want host:port"},
	} {
		args := append([]string{"--set", "mintlify.projects={acme-docs}", "--set", "mintlify.apiKey.existingSecret=k"}, sentinel...)
		if _, err := helmTemplate(append(args, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a refusal naming %q", c.args, err, c.want)
		}
	}
}
