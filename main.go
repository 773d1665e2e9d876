package main

import (
	"os"

	"github.com/tessera-dev/tessera/cli"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:], os.Stdout, os.Stderr))
}
