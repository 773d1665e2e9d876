package db_test

import (
	"os"
	"testing"

	"github.com/tessera-dev/tessera/testkit/pgtest"
)

// TestMain stops the package's throwaway PostgreSQL cluster (pgtest) once
// its tests are done.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
