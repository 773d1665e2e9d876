package cli

import (
	"github.com/spf13/cobra"
)

const migrateLong = `Apply pending database migrations to --db and print the schema version.

With --from and --to, move a SQLite database to PostgreSQL instead:
  tessera migrate --from data/tessera.db --to postgres://user:password@host:5432/tessera
Both are first brought to this binary's schema; then every table is copied
in one PostgreSQL transaction (a failure leaves the PostgreSQL database
without a copied row) and the id sequences continue past the copied ids.
The PostgreSQL database must be empty (freshly created, or migrated but
holding no rows). Stop the server using the SQLite file first: what it
writes after the copy's snapshot is not moved.`

func newMigrateCmd() *cobra.Command {
	var path, from, to string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending database migrations, or move a SQLite database to PostgreSQL (--from, --to)",
		Long:  migrateLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			if f.Changed("from") || f.Changed("to") {
				if f.Changed("db") {
					return usageErr("--db cannot be combined with --from and --to: --from names the SQLite database to move, --to the PostgreSQL database to move it to")
				}
				return moveToPostgres(cmd, from, to)
			}
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
			sayf(cmd.OutOrStdout(), "%s: schema version %d\n", loc.Redacted(), v)
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "db", envOr("TESSERA_DB", "data/tessera.db"), dbFlagUsage)
	cmd.Flags().StringVar(&from, "from", "", "SQLite database file to move to PostgreSQL (with --to)")
	cmd.Flags().StringVar(&to, "to", "", "empty PostgreSQL database to move --from into, postgres://user:password@host:5432/dbname (with --from)")
	return cmd
}
