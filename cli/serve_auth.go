package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/catalog"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/handlers"
)

// authFlags are serve's account settings.
type authFlags struct {
	Idle, Max     string
	Secure        string
	TrustProxy    bool
	LoginLimit    string
	LoginTrust    string
	HashSlots     string
	AnonymousView bool
	// bools are the boolean flags above, to report an invalid environment
	// value the flag did not override.
	bools []*envBoolValue
}

const authHelp = `
Accounts: on first start with no users, serve creates the account "admin"
with a random password and prints it once in the log ("created first admin
account"). Add more with "tessera user add".
Session cookies are signed with TESSERA_SESSION_KEYS (comma-separated; the
first key signs, every key verifies, so keys can be rotated); without it a
key file DB.session-key is created next to the database (mode 0600) on
first start, so restarts keep everyone signed in. On PostgreSQL every
instance needs keys the others read: one whose signing key a live
instance lacks, or that lacks a live instance's, does not start (to
rotate, add the new key after the current one everywhere, then move it
first).`

// parseBool reads a boolean setting: 1/0, true/false, yes/no, on/off, in
// any case.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean: use 1/0, true/false, yes/no or on/off", s)
}

// envBoolValue is a boolean flag whose default comes from an environment
// variable; both accept parseBool's spellings. An invalid environment value
// is kept as envErr and reported by check unless the flag was given.
type envBoolValue struct {
	p        *bool
	env      string
	envErr   error
	fromFlag bool
}

func (v *envBoolValue) Set(s string) error {
	b, err := parseBool(s)
	if err != nil {
		return err
	}
	*v.p, v.fromFlag = b, true
	return nil
}
func (v *envBoolValue) String() string {
	if v == nil || v.p == nil {
		return "false"
	}
	return strconv.FormatBool(*v.p)
}
func (v *envBoolValue) Type() string     { return "bool" }
func (v *envBoolValue) IsBoolFlag() bool { return true }

// check reports an invalid environment value the flag did not override.
func (v *envBoolValue) check() error {
	if v.envErr != nil && !v.fromFlag {
		return usageErr("%s=%v", v.env, v.envErr)
	}
	return nil
}

// envBoolFlag adds a boolean flag --name defaulting to $env (false when unset).
func envBoolFlag(cmd *cobra.Command, p *bool, name, env, usage string) *envBoolValue {
	v := &envBoolValue{p: p, env: env}
	*p = false
	if s, ok := os.LookupEnv(env); ok && s != "" {
		*p, v.envErr = parseBool(s)
	}
	cmd.Flags().Var(v, name, usage)
	cmd.Flags().Lookup(name).NoOptDefVal = "true"
	return v
}

func addAuthFlags(cmd *cobra.Command, a *authFlags) {
	cmd.Long += "\n" + authHelp
	f := cmd.Flags()
	f.StringVar(&a.Idle, "session-idle", envOr("TESSERA_SESSION_IDLE", "12h"), "sign out after this long without a request (env TESSERA_SESSION_IDLE)")
	f.StringVar(&a.Max, "session-max", envOr("TESSERA_SESSION_MAX", "7d"), "absolute session lifetime (env TESSERA_SESSION_MAX)")
	f.StringVar(&a.Secure, "secure-cookies", envOr("TESSERA_SECURE_COOKIES", "auto"), "Secure cookie flag: auto (over TLS, or behind a trusted proxy sending X-Forwarded-Proto: https), always, never (env TESSERA_SECURE_COOKIES)")
	a.bools = append(a.bools, envBoolFlag(cmd, &a.TrustProxy, "trust-proxy", "TESSERA_TRUST_PROXY", "trust X-Forwarded-For and X-Forwarded-Proto from a reverse proxy (env TESSERA_TRUST_PROXY: 1/0, true/false, yes/no, on/off)"))
	f.StringVar(&a.LoginLimit, "login-limit", envOr("TESSERA_LOGIN_LIMIT", "5/15m"), "failed sign-ins allowed per account and per address: FAILURES/WINDOW, or off (env TESSERA_LOGIN_LIMIT)")
	f.StringVar(&a.LoginTrust, "login-trust", envOr("TESSERA_LOGIN_TRUST", "30d"), "an account locked by failed sign-ins stays open to addresses that signed in to it within this long, or off (env TESSERA_LOGIN_TRUST)")
	f.StringVar(&a.HashSlots, "login-hash-slots", envOr("TESSERA_LOGIN_HASH_SLOTS", "auto"), "password checks running at once, 19 MiB each: a number, or auto (sized from memory and cores) (env TESSERA_LOGIN_HASH_SLOTS)")
	a.bools = append(a.bools, envBoolFlag(cmd, &a.AnonymousView, "anonymous-viewer", "TESSERA_ANONYMOUS_VIEWER", "let anyone read every page without signing in (viewer role) (env TESSERA_ANONYMOUS_VIEWER: 1/0, true/false, yes/no, on/off)"))
}

// config validates the flags and loads the session keys.
func (a authFlags) config(dbPath string) (handlers.AuthConfig, error) {
	cfg, err := a.settings()
	if err != nil {
		return cfg, err
	}
	return cfg, loadSessionKey(&cfg, dbPath)
}

// settings validates the flags and the environment without touching any
// file: the session keys come from TESSERA_SESSION_KEYS, or are left empty
// for loadSessionKey.
func (a authFlags) settings() (handlers.AuthConfig, error) {
	var cfg handlers.AuthConfig
	var err error
	for _, b := range a.bools {
		if err := b.check(); err != nil {
			return cfg, err
		}
	}
	if cfg.IdleTimeout, err = catalog.ParseDuration(a.Idle); err != nil || cfg.IdleTimeout <= 0 {
		return cfg, usageErr("--session-idle %q is not a positive duration (for example 12h)", a.Idle)
	}
	if cfg.MaxLifetime, err = catalog.ParseDuration(a.Max); err != nil || cfg.MaxLifetime <= 0 {
		return cfg, usageErr("--session-max %q is not a positive duration (for example 7d)", a.Max)
	}
	switch a.Secure {
	case "auto", "always", "never":
		cfg.SecureCookies = a.Secure
	default:
		return cfg, usageErr("--secure-cookies must be auto, always or never, got %q", a.Secure)
	}
	if cfg.LoginLimit, err = auth.ParseLimit(a.LoginLimit, catalog.ParseDuration); err != nil {
		return cfg, usageErr("--login-limit: %v", err)
	}
	switch t := strings.TrimSpace(a.LoginTrust); t {
	case "off", "0":
		cfg.LoginTrust = -1
	case "": // NewAuth's default
	default:
		if cfg.LoginTrust, err = catalog.ParseDuration(t); err != nil || cfg.LoginTrust <= 0 {
			return cfg, usageErr("--login-trust %q is not a positive duration (for example 30d) or off", a.LoginTrust)
		}
	}
	if s := strings.TrimSpace(a.HashSlots); s != "auto" && s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 256 {
			return cfg, usageErr("--login-hash-slots %q is not auto or a number from 1 to 256 (each check holds 19 MiB while it runs)", a.HashSlots)
		}
		cfg.HashSlots = n
	}
	cfg.TrustProxy, cfg.AnonymousViewer = a.TrustProxy, a.AnonymousView
	if keys := os.Getenv("TESSERA_SESSION_KEYS"); keys != "" {
		for _, k := range strings.Split(keys, ",") {
			if k = strings.TrimSpace(k); k != "" {
				if len(k) < 16 {
					return cfg, usageErr("TESSERA_SESSION_KEYS: every key needs at least 16 characters")
				}
				cfg.SessionKeys = append(cfg.SessionKeys, k)
			}
		}
		if len(cfg.SessionKeys) == 0 {
			return cfg, usageErr("TESSERA_SESSION_KEYS holds no key")
		}
	}
	return cfg, nil
}

// loadSessionKey reads (or creates) the key file next to the database when
// TESSERA_SESSION_KEYS gave no key.
func loadSessionKey(cfg *handlers.AuthConfig, dbPath string) error {
	if len(cfg.SessionKeys) > 0 {
		return nil
	}
	k, err := sessionKeyFile(dbPath + ".session-key")
	if err != nil {
		return &exitError{ExitServer, err}
	}
	cfg.SessionKeys = []string{k}
	return nil
}

// sessionKeyFile reads the key file, creating it (0600) on first start.
func sessionKeyFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if k := strings.TrimSpace(string(b)); len(k) >= 16 {
			return k, nil
		}
		return "", fmt.Errorf("session key file %s is too short; delete it to create a new one", path)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("session key file: %w", err)
	}
	k := auth.RandomString(32)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("create session key file: %w", err)
	}
	if _, err := f.WriteString(k + "\n"); err != nil {
		f.Close()
		return "", err
	}
	return k, f.Close()
}

// ensureFirstAdmin creates "admin" with a random password on a database
// without users and logs the password once.
func ensureFirstAdmin(ctx context.Context, store *db.Store, log *slog.Logger, url string) error {
	n, err := store.CountUsers(ctx)
	if err != nil || n > 0 {
		return err
	}
	pw := auth.RandomString(15)
	hash, err := auth.HashPassword(pw)
	if err != nil {
		return err
	}
	created, err := store.CreateFirstAdmin(ctx, "admin", hash, time.Now())
	if err != nil || !created {
		return err
	}
	log.Warn("created first admin account: sign in and change this password (on /settings/password); it is shown only this once",
		"user", "admin", "password", pw, "login", url+"login")
	return nil
}
