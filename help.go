package main

import (
	"slices"
	"strings"
	"text/template"

	"github.com/alecthomas/kingpin/v2"
)

// mainFlags are the flags the top-level --help lists: what a first run
// needs (where to listen, what to read, which key). Every other flag is in
// serve --help (the default command's) or its command's --help; the whole
// list of 60-odd flags made a --help of 158 lines that did not show where
// the exporter listens.
var mainFlags = []string{"web.listen-address", "config.file", "mintlify.project", "mintlify.api-key-file",
	"mintlify.sandbox", "web.enable-agent-api", "web.enable-deployment-api", "log.level", "help", "version"}

// usageTemplate is kingpin's default, except that a command's help
// (backfill --help) lists the command's own flags first and the flags
// shared by every command after them, and the top-level --help lists
// mainFlags and says where the rest are.
var usageTemplate = strings.Replace(kingpin.DefaultUsageTemplate, `{{if .Context.Flags -}}
Flags:
{{.Context.Flags|FlagsToTwoColumns|FormatTwoColumns}}
{{end -}}`, `{{if .Context.SelectedCommand -}}
{{if .Context.SelectedCommand.Flags -}}
Flags of {{.Context.SelectedCommand.FullCommand}}:
{{.Context.SelectedCommand.Flags|FlagsToTwoColumns|FormatTwoColumns}}
{{end -}}
Flags of every command:
{{.App.Flags|FlagsToTwoColumns|FormatTwoColumns}}
{{else if .Context.Flags -}}
Flags:
{{MainFlags .App|FlagsToTwoColumns|FormatTwoColumns}}
Every flag of serving metrics (the default command): `+exporterName+` serve --help.
A command's flags: `+exporterName+` COMMAND --help.

{{end -}}`, 1)

// usageFuncs are the template's own functions.
var usageFuncs = template.FuncMap{
	// MainFlags are mainFlags, from the application's and the default
	// command's flags, in mainFlags' order.
	"MainFlags": func(app *kingpin.ApplicationModel) []*kingpin.FlagModel {
		all := slices.Clone(app.Flags)
		for _, c := range app.Commands {
			if c.Default {
				all = append(all, c.Flags...)
			}
		}
		var out []*kingpin.FlagModel
		for _, name := range mainFlags {
			if i := slices.IndexFunc(all, func(f *kingpin.FlagModel) bool { return f.Name == name }); i >= 0 {
				out = append(out, all[i])
			}
		}
		return out
	},
}

// setPlaceholders gives every flag of app that has neither a placeholder
// nor a default a short one (USER, FILE, DIR, NAME, DATE, ...), instead of
// kingpin's upper-cased name (--cluster.redis-username=CLUSTER.REDIS-USERNAME).
// A flag with a default keeps it as its placeholder: it says more.
func setPlaceholders(app *kingpin.Application) {
	m := app.Model()
	set := func(get func(string) *kingpin.FlagClause, flags []*kingpin.FlagModel) {
		for _, f := range flags {
			// A default of "" (the toolkit's --web.config.file) says
			// nothing: it shows as --web.config.file="".
			if f.PlaceHolder != "" || slices.ContainsFunc(f.Default, func(d string) bool { return d != "" }) || f.IsBoolFlag() {
				continue
			}
			if c := get(f.Name); c != nil {
				c.PlaceHolder(placeholder(f.Name))
			}
		}
	}
	set(app.GetFlag, m.Flags)
	var walk func(cmds []*kingpin.CmdModel, get func(string) *kingpin.CmdClause)
	walk = func(cmds []*kingpin.CmdModel, get func(string) *kingpin.CmdClause) {
		for _, c := range cmds {
			clause := get(c.Name)
			if clause == nil {
				continue
			}
			set(clause.GetFlag, c.Flags)
			walk(c.Commands, clause.GetCommand)
		}
	}
	walk(m.Commands, app.GetCommand)
}

// placeholder is a flag's short placeholder, from the last word of its
// name.
func placeholder(name string) string {
	word := name[strings.LastIndexAny(name, ".-")+1:]
	switch word {
	case "username":
		return "USER"
	case "from", "to":
		return "DATE"
	}
	return strings.ToUpper(word)
}
