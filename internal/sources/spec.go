package sources

import "github.com/mintlify-exporter/mintlify_exporter/internal/analytics"

// Spec is one source as a project's configuration asks for it: the
// configuration's type, which the plan and the backfill read.
type Spec = analytics.SourceSpec

// Setting is an integer setting of one source (Def.Settings), declared
// to the configuration, which validates it.
type Setting = analytics.Setting
