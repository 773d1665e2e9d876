package cli_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// tessera bench keys runs the real server as a process of its own, times
// create and preview of an explicit list over HTTP and prints one JSON
// line with the server's resident set; its flags are checked first.
func TestBenchKeysPrintsOneLine(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(tesseraBin, "bench", "keys", "--keys", "3000", "--rounds", "2", "--wait", "0s").Output()
	if err != nil {
		t.Fatalf("bench keys: %v\n%s", err, out)
	}
	var res struct {
		Bench        string
		Keys, Rounds int
		BodyMB       float64   `json:"body_mb"`
		PreviewAll   []float64 `json:"preview_all_ms"`
		CreateAll    []float64 `json:"create_all_ms"`
		Python       *float64  `json:"python_json_load_ms"`
		Ratio        *float64  `json:"create_ratio_to_python"`
		GoHeap       float64   `json:"go_heap_inuse_mb"`
	}
	line := strings.TrimSpace(string(out))
	if strings.Count(line, "\n") != 0 || json.Unmarshal([]byte(line), &res) != nil {
		t.Fatalf("bench keys printed %q, not one JSON line", out)
	}
	if res.Bench != "keys" || res.Keys != 3000 || res.Rounds != 2 || res.BodyMB <= 0 || len(res.PreviewAll) != 2 || len(res.CreateAll) != 2 ||
		res.PreviewAll[0] <= 0 || res.CreateAll[1] <= 0 || res.GoHeap <= 0 {
		t.Fatalf("bench keys: %s", line)
	}
	for _, f := range []string{"rss_base_mb", "rss_peak_mb", "rss_after_mb", "rss_after_wait_mb"} {
		if !strings.Contains(line, `"`+f+`":`) || strings.Contains(line, `"`+f+`":0,`) {
			t.Errorf("bench keys: %s missing or 0 in %s", f, line)
		}
	}
	if _, err := exec.LookPath("python3"); err == nil && (res.Python == nil || *res.Python <= 0 || res.Ratio == nil) {
		t.Errorf("python3 is on PATH but bench keys did not time it: %s", line)
	}
	for _, c := range []struct{ args, want string }{
		{"--keys 0", "--keys must be between 1 and 1000000, got 0"},
		{"--rounds 0", "--rounds must be between 1 and 100, got 0"},
		{"--wait -1s", "--wait must be 0 or more, got -1s"},
	} {
		out, err := exec.Command(tesseraBin, append([]string{"bench", "keys"}, strings.Fields(c.args)...)...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("bench keys %s: %v %q, want exit 2 and %q", c.args, err, out, c.want)
		}
	}
}
