package testkit

import (
	"fmt"
	"os"
)

// TestBinaryEnv names the environment variable through which `make test`
// hands the tests that run the real tessera binary (web, cli, e2e) the one
// it built for them all (bin/tessera-test, rebuilt on every run): each of
// those packages built its own copy before, the same link three times over.
// Unset (go test ./cli alone), each package builds its own as before.
const TestBinaryEnv = "TESSERA_TEST_BIN"

// PrebuiltBinary returns the binary TESSERA_TEST_BIN names, "" when it is
// unset; it is an error when it names no executable file (a path relative
// to the package directory would be one: make passes an absolute one).
func PrebuiltBinary() (string, error) {
	p := os.Getenv(TestBinaryEnv)
	if p == "" {
		return "", nil
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%s=%s: %w (unset it to build the binary in the test)", TestBinaryEnv, p, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s=%s is not an executable file (unset it to build the binary in the test)", TestBinaryEnv, p)
	}
	return p, nil
}
