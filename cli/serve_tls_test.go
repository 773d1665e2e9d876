package cli_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/cli"
	"github.com/tessera-dev/tessera/testkit"
)

// TestServeTLS: with --tls-cert and --tls-key, serve answers HTTPS and
// HTTP/2 (every live section of every tab shares one connection), sets
// Secure cookies, logs its https URL, the health check follows
// TESSERA_TLS_CERT, and SIGHUP replaces the certificate.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certPath, keyPath, cert1 := testkit.SelfSignedCert(t, dir, "one")
	addr := testkit.FreeAddr(t)
	dbPath := filepath.Join(dir, "t.db")
	// No demo history: seeding it is 3 s of CPU, and over 45 s in make
	// test on a loaded CI machine, before the server listens.
	cmd, logPath := startServe(t, nil, "--addr", addr, "--db", dbPath, "--seed-demo", "never", "--tls-cert", certPath, "--tls-key", keyPath)
	roots := x509.NewCertPool()
	roots.AddCert(cert1)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	url := "https://" + addr
	resp := waitReady(t, client, url, logPath)
	if resp.Proto != "HTTP/2.0" {
		t.Fatalf("served %s, want HTTP/2.0", resp.Proto)
	}
	resp, err := client.Get(url + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(resp.Cookies()) == 0 {
		t.Fatal("the sign-in page set no cookie")
	}
	for _, c := range resp.Cookies() {
		if !c.Secure {
			t.Errorf("cookie %s is not Secure over HTTPS", c.Name)
		}
	}
	b, _ := os.ReadFile(logPath)
	if !strings.Contains(string(b), `url=https://`+addr+`/`) || !strings.Contains(string(b), "serving HTTPS and HTTP/2") {
		t.Fatalf("the log does not give the https URL:\n%s", b)
	}
	// The health checks run as processes with TESSERA_TLS_CERT in their
	// environment (t.Setenv would keep this test from running in parallel).
	healthcheck := func(args ...string) (int, string) {
		t.Helper()
		hc := exec.Command(tesseraBin, append([]string{"healthcheck", "--addr", addr}, args...)...)
		hc.Env = append(os.Environ(), "TESSERA_TLS_CERT="+certPath)
		out, err := hc.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := healthcheck(); code != 0 || !strings.Contains(out, "ready") {
		t.Fatalf("healthcheck with TESSERA_TLS_CERT: exit %d %q", code, out)
	}
	if code, out := healthcheck("--tls=false"); code != cli.ExitServer {
		t.Fatalf("plain HTTP health check of an HTTPS server: exit %d %q", code, out)
	}

	// Client commands verify the certificate: an unknown one is named as
	// such, with the way to trust it.
	code, token, errOut := run(t, "token", "create", "--user", "admin", "--name", "tls test", "--db", dbPath)
	if code != 0 {
		t.Fatalf("token create: %d %s", code, errOut)
	}
	token = strings.TrimSpace(token)
	if code, _, errOut := run(t, "backfill", "list", "--server", url, "--token", token); code != cli.ExitServer ||
		!strings.Contains(errOut, "is not trusted") || !strings.Contains(errOut, "SSL_CERT_FILE") {
		t.Fatalf("untrusted certificate: exit %d %q", code, errOut)
	}
	list := exec.Command(tesseraBin, "backfill", "list", "--server", url, "--token", token)
	list.Env = append(os.Environ(), "SSL_CERT_FILE="+certPath)
	if out, err := list.CombinedOutput(); err != nil {
		t.Fatalf("backfill list with SSL_CERT_FILE: %v\n%s", err, out)
	}

	// SIGHUP serves the files' new certificate; a broken pair keeps it.
	_, _, cert2 := testkit.SelfSignedCert(t, dir, "one")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	roots.AddCert(cert2)
	testkit.Eventually(t, 30*time.Second, "the server to serve the new certificate after SIGHUP", func() bool {
		client.Transport.(*http.Transport).CloseIdleConnections()
		if resp, err = client.Get(url + "/healthz"); err != nil {
			return false
		}
		resp.Body.Close()
		return resp.TLS.PeerCertificates[0].SerialNumber.String() == cert2.SerialNumber.String()
	})
	if err := os.WriteFile(keyPath, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the log to report the broken key on SIGHUP", func() bool {
		b, _ = os.ReadFile(logPath)
		return strings.Contains(string(b), "TLS certificate not reloaded")
	})
	client.Transport.(*http.Transport).CloseIdleConnections()
	if resp, err = client.Get(url + "/healthz"); err != nil || resp.TLS.PeerCertificates[0].SerialNumber.String() != cert2.SerialNumber.String() {
		t.Fatalf("after a broken reload the previous certificate is not served: %v", err)
	}
	resp.Body.Close()
}

// TestServeTLSBadFiles: TLS settings that cannot serve are usage errors
// that say what to give, before the database exists.
func TestServeTLSBadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certPath, keyPath, _ := testkit.SelfSignedCert(t, dir, "good")
	otherCert, _, _ := testkit.SelfSignedCert(t, dir, "other")
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(dir, "never.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", certPath}, "--tls-cert needs --tls-key"},
		{[]string{"--tls-key", keyPath}, "--tls-key needs --tls-cert"},
		{[]string{"--tls-cert", filepath.Join(dir, "missing.crt"), "--tls-key", keyPath}, "no such file"},
		{[]string{"--tls-cert", garbage, "--tls-key", keyPath}, "give the PEM certificate chain"},
		{[]string{"--tls-cert", otherCert, "--tls-key", keyPath}, "private key does not match public key"},
	} {
		code, _, errOut := run(t, append([]string{"serve", "--addr", busyAddr(t), "--db", dbPath, "--seed-demo", "never"}, tc.args...)...)
		if code != cli.ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d %q, want %d with %q", tc.args, code, errOut, cli.ExitUsage, tc.want)
		}
		if _, err := os.Stat(dbPath); err == nil {
			t.Fatalf("%v: a refused start created the database", tc.args)
		}
	}
}
