package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/db"
)

func newMigrateCmd() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending database migrations and print the schema version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := db.Open(path)
			if err != nil {
				return &exitError{ExitServer, err}
			}
			defer store.Close()
			v, err := store.MigrationVersion()
			if err != nil {
				return &exitError{ExitServer, err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: schema version %d\n", path, v)
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "db", envOr("TESSERA_DB", "data/tessera.db"), "SQLite database file (env TESSERA_DB)")
	return cmd
}
