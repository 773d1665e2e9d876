package handlers_test

import (
	"os"
	"testing"

	"github.com/tessera-dev/tessera/testkit/pgtest"
)

// TestMain stops the package's PostgreSQL cluster (pgtest) after its tests.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
