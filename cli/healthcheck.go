package cli

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
)

// newHealthcheckCmd answers the container HEALTHCHECK without curl: it asks
// the local server's /readyz and exits 0 when ready, 3 otherwise.
func newHealthcheckCmd() *cobra.Command {
	var addr string
	var useTLS bool
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when the local server is ready (for container health checks)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return usageErr("--addr %q is not HOST:PORT: %v", addr, err)
			}
			if host == "" || host == "0.0.0.0" || host == "::" {
				host = "127.0.0.1"
			}
			client := &http.Client{Timeout: 3 * time.Second}
			scheme := "http://"
			if useTLS {
				// The probe asks the local server whether it is ready and
				// sends nothing secret; the certificate names the public
				// host, not 127.0.0.1, so it is not verified here.
				scheme = "https://"
				client.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // local readiness probe
			}
			resp, err := client.Get(scheme + net.JoinHostPort(host, port) + "/readyz")
			if err != nil {
				return &exitError{ExitServer, fmt.Errorf("server not reachable: %v", err)}
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return &exitError{ExitServer, fmt.Errorf("server not ready: %s", resp.Status)}
			}
			sayln(cmd.OutOrStdout(), "ready")
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", envOr("TESSERA_ADDR", "127.0.0.1:8080"), "the server's listen address (env TESSERA_ADDR)")
	cmd.Flags().BoolVar(&useTLS, "tls", os.Getenv("TESSERA_TLS_CERT") != "", "ask over HTTPS (default: when TESSERA_TLS_CERT is set, as for serve)")
	return cmd
}
