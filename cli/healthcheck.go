package cli

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// newHealthcheckCmd answers the container HEALTHCHECK without curl: it asks
// the local server's /readyz and exits 0 when ready, 3 otherwise.
func newHealthcheckCmd() *cobra.Command {
	var addr string
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
			resp, err := client.Get("http://" + net.JoinHostPort(host, port) + "/readyz")
			if err != nil {
				return &exitError{ExitServer, fmt.Errorf("server not reachable: %v", err)}
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return &exitError{ExitServer, fmt.Errorf("server not ready: %s", resp.Status)}
			}
			fmt.Fprintln(cmd.OutOrStdout(), "ready")
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", envOr("TESSERA_ADDR", "127.0.0.1:8080"), "the server's listen address (env TESSERA_ADDR)")
	return cmd
}
