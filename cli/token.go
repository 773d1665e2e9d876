package cli

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
)

func newTokenCmd() *cobra.Command {
	var path string
	cmd := &cobra.Command{Use: "token", Short: "Manage API tokens in the database (create, list, revoke)"}
	dbFlag(cmd, &path)
	cmd.AddCommand(newTokenCreateCmd(&path), newTokenListCmd(&path), newTokenRevokeCmd(&path))
	return cmd
}

func newTokenCreateCmd(path *string) *cobra.Command {
	var user, name, role, expiresIn string
	create := &cobra.Command{
		Use:   "create --user NAME --name LABEL [--role ROLE] [--expires 90d]",
		Short: "Create an API token and print it once (only its hash is stored)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if user == "" {
				return usageErr("--user is required")
			}
			if strings.TrimSpace(name) == "" {
				return usageErr("the token needs a name: add --name NAME, a label that tells it apart in `tessera token list` (e.g. --name nightly-export)")
			}
			if err := auth.ValidateTokenName(name); err != nil {
				return usageErr("--name: %v", err)
			}
			var expires *time.Time
			if cmd.Flags().Changed("expires") {
				d, err := handlers.ParseTokenLifetime(expiresIn)
				if err != nil {
					return usageErr("--expires: %v", err)
				}
				at := time.Now().Add(d)
				expires = &at
			}
			var want auth.Role
			if role != "" {
				r, err := auth.ParseRole(role)
				if err != nil {
					return usageErr("--role: %v", err)
				}
				want = r
			}
			secret, prefix, hash, err := auth.NewToken()
			if err != nil {
				return err
			}
			return withUser(cmd, *path, user, func(ctx context.Context, store *db.Store, u db.User) error {
				if u.Disabled {
					return usageErr("user %q is disabled", user)
				}
				if ur, _ := auth.ParseRole(u.Role); role != "" && want > ur {
					return usageErr("a token cannot have a higher role (%s) than its user %s (%s)", want, u.Name, ur)
				}
				if _, err := store.CreateToken(ctx, u.ID, strings.TrimSpace(name), prefix, hash, role, expires, "cli", time.Now()); err != nil {
					return err
				}
				sayln(cmd.OutOrStdout(), secret)
				until := "; it never expires"
				if expires != nil {
					until = "; it expires at " + timeCell(*expires)
				}
				sayln(cmd.ErrOrStderr(), "token created for", u.Name+"; it is shown only once"+until)
				return nil
			})
		},
	}
	create.Flags().StringVar(&user, "user", "", "owner of the token")
	create.Flags().StringVar(&name, "name", "", "label shown in token lists")
	create.Flags().StringVar(&role, "role", "", "a role lower than the user's (default: the user's role)")
	create.Flags().StringVar(&expiresIn, "expires", "", "the token stops working after this long, e.g. 90d or 12h (at most 3650d; default: never)")
	return create
}

func newTokenListCmd(path *string) *cobra.Command {
	var user string
	var asJSON bool
	list := &cobra.Command{
		Use:   "list [--user NAME]",
		Short: "List API tokens (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: withStore(path, func(cmd *cobra.Command, args []string, store *db.Store) error {
			var uid int64
			if user != "" {
				u, err := store.UserByName(cmd.Context(), user)
				if errors.Is(err, db.ErrNotFound) {
					return usageErr("no user named %q; `tessera user list` lists the accounts", user)
				}
				if err != nil {
					return &exitError{ExitServer, err}
				}
				uid = u.ID
			}
			ts, err := store.ListTokens(cmd.Context(), uid)
			if err != nil {
				return &exitError{ExitServer, err}
			}
			rows := handlers.TokenRows(ts, time.Now(), time.UTC)
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(rows)
			}
			w := newTable(cmd.OutOrStdout(), "ID\tUSER\tNAME\tTOKEN\tROLE\tCREATED\tLAST USED\tEXPIRES\tSTATUS")
			for i, r := range rows {
				t := ts[i] // rows[i] is ts[i] in the page's words; the table writes its times as every table does
				st := "active"
				if r.Revoked {
					st = "revoked"
				} else if r.Expired {
					st = "expired"
				}
				sayf(w, "%d\t%s\t%s\t%s…\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Owner, r.Name, r.Prefix, r.Role, timeCell(db.FromMillis(t.CreatedAt)), msTimeOr(t.LastUsedAt, "never"), msTimeOr(t.ExpiresAt, "never"), st)
			}
			return w.Flush()
		}),
	}
	list.Flags().StringVar(&user, "user", "", "only this user's tokens")
	list.Flags().BoolVar(&asJSON, "json", false, "print exact JSON instead of a table")
	return list
}

func newTokenRevokeCmd(path *string) *cobra.Command {
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token (see `token list` for ids); it stops working at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return usageErr("token id %q is not a number (see `tessera token list`)", args[0])
			}
			store, err := openStore(*path)
			if err != nil {
				return err
			}
			defer store.Close()
			if err := store.RevokeToken(cmd.Context(), id, "cli", time.Now()); err != nil {
				if errors.Is(err, db.ErrNotFound) {
					return usageErr("no token %d; `tessera token list` shows the tokens and their ids", id)
				}
				return userError(err)
			}
			sayf(cmd.OutOrStdout(), "revoked token %d\n", id)
			return nil
		},
	}
	return revoke
}
