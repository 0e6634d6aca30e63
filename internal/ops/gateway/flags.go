package gateway

import (
	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
)

// Flags are the gateway's settings from the command line.
type Flags struct {
	Config Config
	// Enabled: --web.enable-agent-api.
	Enabled bool
	// Deployments: --web.enable-deployment-api.
	Deployments bool
	// StaticExports: --web.enable-static-export-api.
	StaticExports bool
	// Automations: --web.enable-automation-api.
	Automations bool
}

// On reports whether the gateway serves anything (agent jobs,
// deployments, static exports or automations): the tracker runs then.
func (f *Flags) On() bool { return f.Enabled || f.Deployments || f.StaticExports || f.Automations }

// RegisterFlags adds the gateway's flags to app, defaulting to Defaults().
func RegisterFlags(app config.Flagger) *Flags {
	f := &Flags{Config: Defaults()}
	app.Flag("web.enable-agent-api", "Serve the agent job gateway under /api/. Anyone who can reach it can open pull requests: protect it with --web.config.file.").Default("false").BoolVar(&f.Enabled)
	app.Flag("web.enable-deployment-api", "Serve the deployment routes under /api/v1/project/: trigger documentation updates and previews, follow each to its end. Anyone who can reach them can deploy your documentation: protect them with --web.config.file.").Default("false").BoolVar(&f.Deployments)
	app.Flag("web.enable-static-export-api", "Serve the static export routes under /api/v1/static-export/: start exports of the projects with static_exports: true, follow each to its end, make bundles. Protect them with --web.config.file.").Default("false").BoolVar(&f.StaticExports)
	app.Flag("web.enable-automation-api", "Serve the automation routes under /api/v1/workflow/: trigger the runs of the automations a project lists (automations: in --config.file; any on the flag route), follow each as an agent job where the API knows its job. They share the organization's 10 triggers per 10 s with deployment updates. Protect them with --web.config.file.").Default("false").BoolVar(&f.Automations)
	config.BytesVar(app, "agent.max-prompt-bytes", "Largest request body (and so prompt) the gateway accepts for a job, e.g. 64KiB; larger ones get 413.", &f.Config.MaxPromptBytes)
	return f
}

// ValidateFlags is Validate with each error naming its flag. Projects are
// set later, from the configuration, and not checked here.
func (f *Flags) ValidateFlags() error {
	c := f.Config
	c.Projects = nil
	return config.Rename(c.Validate(), map[string]string{"MaxPromptBytes": "--agent.max-prompt-bytes"})
}
