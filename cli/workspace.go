package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/catalog"
)

func newWorkspaceCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "workspace", Short: "Check workspace files"}
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
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok, %d assets, %d pools\n", args[0], len(ws.Assets), len(ws.Pools))
			return nil
		},
	}
	cmd.AddCommand(validate)
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
			return nil, &exitError{ExitUsage, fmt.Errorf("workspace %s has %d problem(s):\n%s", path, len(ve.Problems), ve.Error())}
		}
		return nil, usageErr("%v", err)
	}
	return ws, nil
}
