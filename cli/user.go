package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
)

// openStore opens the existing store at path (a --db value): a SQLite
// file that does not exist is refused rather than created.
func openStore(path string) (*db.Store, error) {
	loc, err := dbLocation(path)
	if err != nil {
		return nil, err
	}
	if loc.Dialect == db.SQLite {
		if _, err := os.Stat(loc.Path); err != nil {
			return nil, &exitError{ExitServer, fmt.Errorf("database %s: %w (start `tessera serve` once, or pass --db)", loc.Path, err)}
		}
	}
	return openLocation(loc)
}

// withStore is a command's RunE that opens the database at *path (see
// openStore), runs run with it and closes it.
func withStore(path *string, run func(cmd *cobra.Command, args []string, store *db.Store) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		store, err := openStore(*path)
		if err != nil {
			return err
		}
		defer store.Close()
		return run(cmd, args, store)
	}
}

// userError turns a validation error into a usage error (exit 2).
func userError(err error) error {
	var ue *handlers.UserError
	var fe *auth.FieldError
	switch {
	case errors.As(err, &ue):
		return usageErr("%s", ue.Message)
	case errors.As(err, &fe):
		return usageErr("%s", fe.Message)
	}
	if errors.Is(err, db.ErrNotFound) {
		return usageErr("%v", err)
	}
	return &exitError{ExitServer, err}
}

// readPassword reads the password from a file, or one line of stdin
// (prompting when stdin is a terminal).
func readPassword(cmd *cobra.Command, file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", usageErr("--password-file %s: %s", file, pathProblem(err))
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	in := cmd.InOrStdin()
	if f, ok := in.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		sayf(cmd.ErrOrStderr(), "Password (at least %d characters): ", auth.MinPasswordLength)
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", usageErr("reading the password from stdin: %v", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// passwordHash reads a new password (readPassword), checks it against the
// policy and hashes it; usage is what follows the command in the hint for
// an empty password.
func passwordHash(cmd *cobra.Command, file, usage string) (string, error) {
	pw, err := readPassword(cmd, file)
	if err != nil {
		return "", err
	}
	if pw == "" && file == "" {
		return "", usageErr("the password is empty: pass --password-file FILE (its first line is the password), or pipe it on standard input (echo \"$PASSWORD\" | %s %s)", cmd.CommandPath(), usage)
	}
	if err := auth.CheckPasswordPolicy(pw); err != nil {
		if file != "" {
			return "", usageErr("--password-file %s: %v", file, err)
		}
		return "", usageErr("%v", err)
	}
	return auth.HashPassword(pw)
}

func newUserCmd() *cobra.Command {
	var path string
	cmd := &cobra.Command{Use: "user", Short: "Manage accounts in the database (add, list, set-role, set-password, disable, enable, unlock)"}
	dbFlag(cmd, &path)
	cmd.AddCommand(newUserAddCmd(&path), newUserListCmd(&path), newUserSetRoleCmd(&path), newUserSetPasswordCmd(&path), newUserUnlockCmd(&path),
		newUserSetDisabledCmd(&path, "disable", "Disable an account: its sessions and tokens stop working at once", true),
		newUserSetDisabledCmd(&path, "enable", "Enable a disabled account", false))
	return cmd
}

func newUserAddCmd(path *string) *cobra.Command {
	var role, pwFile string
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Create an account; the password comes from --password-file, or stdin (prompted on a terminal)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := auth.ValidateUserName(name); err != nil {
				return userError(err)
			}
			if _, err := auth.ParseRole(role); err != nil {
				return usageErr("--role: %v", err)
			}
			hash, err := passwordHash(cmd, pwFile, name+" ...")
			if err != nil {
				return err
			}
			store, err := openStore(*path)
			if err != nil {
				return err
			}
			defer store.Close()
			if _, err := store.CreateUser(cmd.Context(), name, role, hash, "cli", time.Now()); err != nil {
				if errors.Is(err, db.ErrDuplicateUser) {
					// Names are case-insensitive: name the account as stored.
					if u, err := store.UserByName(cmd.Context(), name); err == nil && u.Name != name {
						return usageErr("a user named %q already exists; user names are case-insensitive, so %q is the same name", u.Name, name)
					}
					return usageErr("a user named %q already exists", name)
				}
				return &exitError{ExitServer, err}
			}
			sayf(cmd.OutOrStdout(), "created user %s (%s)\n", name, role)
			return nil
		},
	}
	add.Flags().StringVar(&role, "role", "viewer", "viewer, operator or admin")
	add.Flags().StringVar(&pwFile, "password-file", "", "read the password from this file (first line)")
	return add
}

func newUserListCmd(path *string) *cobra.Command {
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List accounts",
		Args:  cobra.NoArgs,
		RunE: withStore(path, func(cmd *cobra.Command, args []string, store *db.Store) error {
			us, err := store.ListUsers(cmd.Context())
			if err != nil {
				return &exitError{ExitServer, err}
			}
			if asJSON {
				type row struct {
					Name     string `json:"name"`
					Role     string `json:"role"`
					Disabled bool   `json:"disabled"`
					Created  string `json:"created_at"`
				}
				out := []row{}
				for _, u := range us {
					out = append(out, row{u.Name, u.Role, u.Disabled, db.FromMillis(u.CreatedAt).Format(time.RFC3339)})
				}
				return json.NewEncoder(cmd.OutOrStdout()).Encode(out)
			}
			return printTable(cmd.OutOrStdout(), "NAME\tROLE\tSTATUS\tCREATED", us, func(u db.User) []any {
				st := "active"
				if u.Disabled {
					st = "disabled"
				}
				return []any{u.Name, u.Role, st, timeCell(db.FromMillis(u.CreatedAt))}
			})
		}),
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print exact JSON instead of a table")
	return list
}

func newUserSetRoleCmd(path *string) *cobra.Command {
	return userCmd(path, "set-role NAME ROLE", "Change an account's role (applies to its sessions and tokens at once)", 2,
		func(cmd *cobra.Command, args []string) error {
			if _, err := auth.ParseRole(args[1]); err != nil {
				return usageErr("%v", err)
			}
			return nil
		},
		func(ctx context.Context, s *db.Store, u db.User, args []string) (string, error) {
			if err := s.SetUserRole(ctx, u.ID, args[1], "cli", time.Now()); err != nil {
				return "", err
			}
			return withAdminCheck(ctx, s, fmt.Sprintf("%s is now %s", u.Name, args[1]))
		})
}

// withAdminCheck is done, and, when no enabled admin account is left, a
// second line that says so and how to get one back: the dashboard's own
// forms never leave none (an admin cannot demote or disable itself), but
// the host's CLI may.
func withAdminCheck(ctx context.Context, s *db.Store, done string) (string, error) {
	users, err := s.ListUsers(ctx)
	if err != nil {
		return "", err
	}
	for _, u := range users {
		if u.Role == "admin" && !u.Disabled {
			return done, nil
		}
	}
	return done + "\nnote: no enabled admin account is left, so nobody can manage accounts or settings in the dashboard; give one back with tessera user set-role NAME admin (or tessera user enable NAME)", nil
}

func newUserSetDisabledCmd(path *string, use, short string, disabled bool) *cobra.Command {
	return userCmd(path, use+" NAME", short, 1, nil, func(ctx context.Context, s *db.Store, u db.User, args []string) (string, error) {
		if err := s.SetUserDisabled(ctx, u.ID, disabled, "cli", time.Now()); err != nil {
			return "", err
		}
		return withAdminCheck(ctx, s, fmt.Sprintf("%sd %s", use, u.Name))
	})
}

func newUserSetPasswordCmd(path *string) *cobra.Command {
	var newPwFile, hash string
	setPassword := userCmd(path, "set-password NAME", "Set an account's password (from --password-file, or stdin) and end its sessions; recovers a lost admin password", 1,
		func(cmd *cobra.Command, args []string) (err error) {
			hash, err = passwordHash(cmd, newPwFile, args[0])
			return err
		},
		func(ctx context.Context, s *db.Store, u db.User, args []string) (string, error) {
			return fmt.Sprintf("set the password of %s (its sessions are signed out)", u.Name), s.SetUserPassword(ctx, u.ID, hash, "cli", time.Now())
		})
	setPassword.Flags().StringVar(&newPwFile, "password-file", "", "read the password from this file (first line)")
	return setPassword
}

func newUserUnlockCmd(path *string) *cobra.Command {
	return userCmd(path, "unlock NAME", "Lift an account's sign-in lock: forget its failed sign-ins from every address (a running server sees it at once)", 1, nil,
		func(ctx context.Context, s *db.Store, u db.User, args []string) (string, error) {
			n, err := s.UnlockUser(ctx, u.ID, "cli", time.Now())
			return fmt.Sprintf("unlocked %s (forgot %d failed sign-ins)", u.Name, n), err
		})
}

// userCmd is a command that changes the account its first argument names:
// check (when not nil) vets the arguments before the database is opened,
// then act changes the account and says what it did, which is printed
// unless act fails.
func userCmd(path *string, use, short string, nargs int, check func(cmd *cobra.Command, args []string) error,
	act func(ctx context.Context, s *db.Store, u db.User, args []string) (string, error)) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(nargs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if check != nil {
				if err := check(cmd, args); err != nil {
					return err
				}
			}
			return withUser(cmd, *path, args[0], func(ctx context.Context, s *db.Store, u db.User) error {
				done, err := act(ctx, s, u, args)
				if err != nil {
					return err
				}
				sayln(cmd.OutOrStdout(), done)
				return nil
			})
		},
	}
}

// withUser opens the database at path, finds the account named name (a
// usage error when there is none) and runs fn with it; fn's errors are the
// server's unless they are exitErrors already (usageErr).
func withUser(cmd *cobra.Command, path, name string, fn func(ctx context.Context, s *db.Store, u db.User) error) error {
	store, err := openStore(path)
	if err != nil {
		return err
	}
	defer store.Close()
	u, err := store.UserByName(cmd.Context(), name)
	if err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return usageErr("no user named %q; `tessera user list` lists the accounts", name)
		}
		return &exitError{ExitServer, err}
	}
	if err := fn(cmd.Context(), store, u); err != nil {
		if _, ok := errors.AsType[*exitError](err); ok {
			return err
		}
		return &exitError{ExitServer, err}
	}
	return nil
}
