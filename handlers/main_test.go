package handlers_test

import (
	"os"
	"testing"

	"github.com/tessera-dev/tessera/testkit"
)

// TestMain stops the package's PostgreSQL cluster (pgtest) and removes
// its seeded database (testkit.Options.Seed) after its tests.
func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }
