package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newMigrateCmd() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending database migrations and print the schema version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			loc, err := dbLocation(path)
			if err != nil {
				return err
			}
			store, err := openLocation(loc)
			if err != nil {
				return err
			}
			defer store.Close()
			v, err := store.MigrationVersion()
			if err != nil {
				return &exitError{ExitServer, err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: schema version %d\n", loc.Redacted(), v)
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "db", envOr("TESSERA_DB", "data/tessera.db"), dbFlagUsage)
	return cmd
}
