package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/testkit"
)

// TestServePreloadsStaleness: after a start, the staleness facts of every
// asset are loaded in the background, so the first pages do not load them
// cold; the log says when, for how many assets.
func TestServePreloadsStaleness(t *testing.T) {
	t.Parallel()
	_, logPath := serveBinary(t, nil, "--db", filepath.Join(t.TempDir(), "t.db"))
	var log string
	testkit.Eventually(t, 30*time.Second, "the log to say the staleness facts are preloaded", func() bool {
		b, _ := os.ReadFile(logPath)
		log = string(b)
		return strings.Contains(log, "staleness facts preloaded")
	})
	if !strings.Contains(log, `msg="staleness facts preloaded" assets=6`) {
		t.Fatalf("no preload of the demo workspace's 6 assets in the log:\n%s", log)
	}
}
