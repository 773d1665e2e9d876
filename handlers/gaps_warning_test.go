package handlers_test

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/testkit"
)

// The warning of an asset without a watermark suggests a curl command: pasted
// into a shell with TESSERA_URL and TESSERA_TOKEN set, it must record the
// watermark (the token must be expanded, so not inside single quotes).
func TestNoWatermarkWarningCommandWorksInAShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	env := testkit.New(t, testkit.Options{WorkspaceYAML: gapsWS})
	code, g, _ := gapsOf(t, env, "gaps.daily", "")
	if code != 200 || !g.Skipped {
		t.Fatalf("no watermark: %d %+v", code, g)
	}
	if !strings.Contains(g.Warning, "tessera report gaps.daily --watermark KEY") {
		t.Errorf("the warning does not name the CLI command: %q", g.Warning)
	}
	i := strings.Index(g.Warning, "curl ")
	if i < 0 {
		t.Fatalf("no curl command in %q", g.Warning)
	}
	command := strings.ReplaceAll(g.Warning[i:], "KEY", "2025-01-20")

	// A stand-in curl prints the arguments the shell gives it, one a line;
	// the test then sends that request for real.
	script := `curl() { for a in "$@"; do printf '%s\n' "$a"; done; }; ` + command
	cmd := exec.Command(sh, "-c", script)
	cmd.Env = []string{"TESSERA_URL=" + env.URL, "TESSERA_TOKEN=" + env.AdminToken(), "PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", script, err)
	}
	args := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	var method, body, target string
	header := http.Header{}
	for j := 0; j < len(args); j++ {
		switch args[j] {
		case "-X":
			j++
			method = args[j]
		case "-H":
			j++
			k, v, _ := strings.Cut(args[j], ": ")
			header.Add(k, v)
		case "-d":
			j++
			body = args[j]
		default:
			target = args[j]
		}
	}
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		t.Fatalf("the suggested command is not a request (%q): %v", args, err)
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the suggested command %q answered %d (arguments as the shell passes them: %q)", command, resp.StatusCode, args)
	}

	resp = env.BearerDo(t, "GET", "/api/v1/assets/gaps.daily/watermark", env.AdminToken(), "", "")
	defer resp.Body.Close()
	var wm struct {
		Partition string `json:"partition"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&wm); err != nil || wm.Partition != "2025-01-20" {
		t.Fatalf("watermark after the suggested command: %+v %v", wm, err)
	}
}
