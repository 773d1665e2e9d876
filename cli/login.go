package cli

import (
	"bufio"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// newLoginCmd checks a server and token and stores them (0600) for the other
// client commands.
func newLoginCmd() *cobra.Command {
	var o clientOpts
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Store a server URL and API token for the client commands (config file, mode 0600)",
		Long: `Store a server URL and API token for the client commands.

The token comes from --token, TESSERA_TOKEN, or standard input. Create one on
the dashboard's /settings/tokens page or with "tessera token create". The file
is $TESSERA_CONFIG or ~/.config/tessera/config.json; --server, --token and the
TESSERA_URL / TESSERA_TOKEN variables override it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			token := firstNonEmpty(o.token, os.Getenv("TESSERA_TOKEN"))
			if token == "" {
				sayf(cmd.ErrOrStderr(), "API token: ")
				line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
				if err != nil && line == "" {
					return usageErr("no token: pass --token, set TESSERA_TOKEN or type it on standard input")
				}
				token = strings.TrimSpace(line)
			}
			o.token = token
			c, err := o.newClient()
			if err != nil {
				return err
			}
			var me struct {
				Name string `json:"name"`
				Role string `json:"role"`
			}
			if err := c.do(cmd.Context(), "GET", "/api/v1/me", nil, nil, &me); err != nil {
				return err
			}
			p, err := writeConfig(clientConfig{Server: c.base, Token: token})
			if err != nil {
				return err
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), map[string]string{"server": c.base, "user": me.Name, "role": me.Role, "config": p})
			}
			sayf(cmd.OutOrStdout(), "signed in to %s as %s (%s); saved to %s\n", c.base, me.Name, me.Role, p)
			return nil
		},
	}
	addClientFlags(cmd, &o)
	answerJSON(cmd)
	return cmd
}
