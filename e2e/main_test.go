package e2e

import (
	"os"
	"testing"

	"github.com/tessera-dev/tessera/testkit"
)

// TestMain stops the Chromium the package's browser tests share
// (testkit.Browser) after them.
func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }
