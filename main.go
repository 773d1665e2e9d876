// Tessera is a self-hosted dashboard for partitioned data pipelines: the
// state of every partition of every asset, backfills previewed, chunked,
// paused, resumed, cancelled and retried, and read-only staleness views.
package main

import (
	"os"

	"github.com/tessera-dev/tessera/cli"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:], os.Stdout, os.Stderr))
}
