package web_test

import (
	"os"
	"testing"

	"github.com/tessera-dev/tessera/testkit"
)

// TestMain stops what the package's tests share after them: the PostgreSQL
// cluster (pgtest) and the Chromium (testkit.Browser).
func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }
