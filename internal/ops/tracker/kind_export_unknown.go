package tracker

// Static export starts of unknown outcome: listed, settled and dismissed
// through the engine's intents, as every kind's.

// UnknownExportStart is a start whose outcome is unknown, as listed to
// operators: the engine's listing and the domain asked for.
type UnknownExportStart struct {
	UnknownIntent
	Domain string `json:"domain"`
}

// ExportOps is the engine's part of the static export routes: the
// followed exports, and the starts of unknown outcome (settled with their
// domain).
func (s *Tracker) ExportOps() Ops[ExportView, UnknownExportStart] {
	return routesOf(s.exportOps, func(in *exportIntent) UnknownExportStart {
		return UnknownExportStart{unknownOf(&in.opIntent), in.Domain}
	})
}
