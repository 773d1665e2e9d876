package testkit

import (
	"testing"

	"github.com/tessera-dev/tessera/testkit/pgtest"
)

// Main runs a package's tests (m.Run), then stops what they shared: the
// PostgreSQL cluster (pgtest.Main), the shared Chromium (Browser) and the
// seeded database (Options.Seed). A package's TestMain is
//
//	func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }
func Main(m *testing.M) int {
	defer RemoveSeeded()
	defer StopBrowser()
	return pgtest.Main(m)
}
