package tracker

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// DeploymentDurationBuckets are the classic buckets of
// mintlify_deployment_duration_seconds: 10s to 1h.
var DeploymentDurationBuckets = []float64{10, 20, 30, 45, 60, 90, 120, 180, 300, 600, 1200, 3600}

// newDeployMetrics are the mintlify_deployment* families (the engine's,
// opMetrics), by kind of deployment.
func newDeployMetrics() *opMetrics {
	return newOpMetrics(opFamilies{stem: "mintlify_deployment", noun: "deployment", requests: "deployment triggers", route: "unknown-triggers",
		ended: "endedAt", labels: []string{"kind"}, values: [][]string{{KindUpdate}, {KindPreview}},
		finals: []string{apiclient.DeploymentSuccess, apiclient.DeploymentFailure}, buckets: DeploymentDurationBuckets})
}

// deployGauges are a project's deployments of kind at scrape time.
func (pj *projectJobs) deployGauges(kind string) *opGauges {
	if pj.deploy == nil {
		pj.deploy = map[string]*opGauges{}
	}
	g := pj.deploy[kind]
	if g == nil {
		g = &opGauges{}
		pj.deploy[kind] = g
	}
	return g
}

// addDeployment adds r to the scrape-time state of its project.
func (pj *projectJobs) addDeployment(r *deployRecord) {
	pj.deployGauges(r.Kind).add(&r.opState, r.final(), r.Status == apiclient.DeploymentSuccess, r.EndedAt)
}

// unknownDeploy counts a trigger of kind of unknown outcome.
func (pj *projectJobs) unknownDeploy(kind string) { pj.deployGauges(kind).unknown++ }

// collectDeployments sends the deployments' gauges of project p as of now.
func (m *metrics) collectDeployments(ch chan<- prometheus.Metric, p string, pj *projectJobs, now time.Time) {
	for _, k := range DeploymentKinds {
		if g := pj.deployGauges(k); m.deploy.shown(g) {
			m.deploy.collect(ch, g, now, p, k)
		}
	}
}
