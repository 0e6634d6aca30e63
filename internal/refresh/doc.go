// Package refresh decides when each project, analytics source and window is
// walked, from the analytics budget and each walk's cost in requests, and
// runs the walks on that plan (not on scrapes). It hands finished snapshots
// to the collector, which only turns them into metrics.
package refresh
