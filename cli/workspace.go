package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/catalog"
)

func newWorkspaceCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "workspace", Short: "Check workspace files, and reload a running server's"}
	validate := &cobra.Command{
		Use:     "validate FILE",
		Aliases: []string{"check"},
		Short:   "Check a workspace file and print every problem with file, line and field",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := loadWorkspaceFile(args[0])
			if err != nil {
				return err
			}
			sayf(cmd.OutOrStdout(), "%s: ok, %s, %s, %s, %s\n", args[0], nOf(int64(len(ws.Assets)), "asset"), nOf(int64(len(ws.Pools)), "pool"),
				nOf(int64(len(ws.Schedules)), "schedule"), nOf(int64(len(ws.Sensors)), "sensor"))
			return nil
		},
	}
	var o clientOpts
	reload := &cobra.Command{
		Use:   "reload",
		Short: "Make a running server read its workspace file again (admin; the server keeps its workspace if the file has problems)",
		Args:  cobra.NoArgs,
		RunE: o.withClient(nil, func(cmd *cobra.Command, args []string, c *client) error {
			var out struct {
				Source string `json:"source"`
				Assets int    `json:"assets"`
			}
			if err := c.do(cmd.Context(), "POST", "/api/v1/workspace/reload", nil, nil, &out); err != nil {
				return err
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), out)
			}
			sayf(cmd.OutOrStdout(), "reloaded %s: %s\n", out.Source, nOf(int64(out.Assets), "asset"))
			return nil
		}),
	}
	addClientFlags(reload, &o)
	answerJSON(reload)
	cmd.AddCommand(validate, reload)
	return cmd
}

// loadWorkspaceFile reads and validates a workspace file; problems become a
// usage error listing each on its own line.
func loadWorkspaceFile(path string) (*catalog.Workspace, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErr("read workspace: %v", err)
	}
	ws, err := catalog.ParseWorkspace(path, data)
	if err != nil {
		var ve *catalog.ValidationError
		if errors.As(err, &ve) {
			return nil, &exitError{ExitUsage, fmt.Errorf("workspace %s has %s:\n%s", path, nOf(int64(len(ve.Problems)), "problem"), ve.Error())}
		}
		return nil, usageErr("%v", err)
	}
	return ws, nil
}
