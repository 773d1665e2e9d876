// Package catalog is Tessera's pure domain: the workspace file and its
// parser, assets and their partition schemes (time windows, static,
// dynamic, multi-dimensional), partition spaces counted and indexed by
// arithmetic (never by listing a range), dependency mappings, selectors,
// the staleness rules, and the tick arithmetic of schedules (cron
// expressions evaluated across daylight saving time, catch-up after a
// downtime, the windows a tick targets: schedule_*.go).
//
// It imports nothing of Tessera's and does no I/O beyond reading the
// workspace bytes it is given: no SQL, no HTTP, no clock other than the
// "now" its callers pass in.
package catalog
