// Tessera is a self-hosted dashboard for partitioned data pipelines: the
// state of every partition of every asset, backfills previewed, chunked,
// paused, resumed, cancelled and retried, and read-only staleness views.
package main
