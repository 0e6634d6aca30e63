package sources

import "github.com/mintlify-exporter/mintlify_exporter/internal/visitors"

// Spec is one source as a project's configuration asks for it: the
// configuration's type, which the plan and the backfill read.
type Spec = visitors.SourceSpec

// Setting is an integer setting of one source (Def.Settings), declared
// to the configuration, which validates it.
type Setting = visitors.Setting
