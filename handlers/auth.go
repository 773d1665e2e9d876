package handlers

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
)

// AuthConfig is how accounts behave; serve fills it from flags and env.
type AuthConfig struct {
	// SessionKeys sign and encrypt the session cookie: the first key signs,
	// every key verifies (rotation). Empty: random keys (sessions end on restart).
	SessionKeys []string
	IdleTimeout time.Duration // default 12h
	MaxLifetime time.Duration // default 7 days
	// SecureCookies is "auto" (Secure over TLS or when a trusted proxy says
	// https), "always" or "never".
	SecureCookies string
	// TrustProxy trusts X-Forwarded-For and X-Forwarded-Proto.
	TrustProxy bool
	LoginLimit auth.Limit
	// LoginTrust is how long a sign-in from an address keeps its account
	// open to that address while failures from elsewhere lock it (default
	// 30 days; negative: never).
	LoginTrust time.Duration
	// FailureDelay slows every failed sign-in (default 250ms).
	FailureDelay time.Duration
	// HashSlots bounds the password checks running at once (0: sized from
	// the machine's memory, auth.DefaultHashSlots); HashWait is how long a
	// sign-in waits for one before it is answered 503 (default 3s).
	HashSlots int
	HashWait  time.Duration
	// AnonymousViewer lets anyone read every viewer page and endpoint.
	AnonymousViewer bool
}

// DefaultLoginLimit is 5 failed sign-ins per 15 minutes per account and per address.
var DefaultLoginLimit = auth.Limit{Failures: 5, Window: 15 * time.Minute}

// Auth resolves who is asking: session cookies for browsers, bearer tokens
// for the API.
type Auth struct {
	Cfg     AuthConfig
	Store   *db.Store
	Log     *slog.Logger
	slots   *auth.HashSlots
	cookies *sessions.CookieStore
	now     func() time.Time
	flash   flashes     // one-time notices for the page a form redirects to (flash.go)
	later   laterWrites // uses of sessions and tokens that reads leave to later (auth_touches.go)
}

const sessionCookie = "tessera_session"

// NewAuth builds the accounts layer with defaults filled in.
func NewAuth(store *db.Store, cfg AuthConfig) *Auth {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 12 * time.Hour
	}
	if cfg.MaxLifetime <= 0 {
		cfg.MaxLifetime = 7 * 24 * time.Hour
	}
	if cfg.SecureCookies == "" {
		cfg.SecureCookies = "auto"
	}
	if cfg.FailureDelay < 0 {
		cfg.FailureDelay = 0
	} else if cfg.FailureDelay == 0 {
		cfg.FailureDelay = 250 * time.Millisecond
	}
	if cfg.LoginTrust == 0 {
		cfg.LoginTrust = 30 * 24 * time.Hour
	}
	if cfg.HashSlots <= 0 {
		cfg.HashSlots = auth.DefaultHashSlots()
	}
	if cfg.HashWait <= 0 {
		cfg.HashWait = 3 * time.Second
	}
	keys := cfg.SessionKeys
	if len(keys) == 0 {
		keys = []string{auth.RandomString(32)}
	}
	var pairs [][]byte
	for _, k := range keys {
		h := sha256.Sum256([]byte("tessera-session-hash:" + k))
		b := sha256.Sum256([]byte("tessera-session-block:" + k))
		pairs = append(pairs, h[:], b[:])
	}
	cs := sessions.NewCookieStore(pairs...)
	cs.MaxAge(int(cfg.MaxLifetime / time.Second))
	return &Auth{Cfg: cfg, Store: store, slots: auth.NewHashSlots(cfg.HashSlots), cookies: cs, now: time.Now}
}

// Principal is who a request acts as.
type Principal struct {
	UserID    int64
	Name      string
	Role      auth.Role
	Via       string // "session", "token" or "anonymous"
	SessionID string // hash of the session secret
	TokenID   int64
	// TokenExpires is when the token signed in with expires (nil: never,
	// or not signed in with a token): the tokens it creates expire by then.
	TokenExpires *time.Time
	// Timezone is the user's display zone ("" = the browser's; display_time.go).
	Timezone string
}

// Anonymous reports whether nobody signed in (anonymous viewer mode).
func (p *Principal) Anonymous() bool { return p == nil || p.Via == "anonymous" }

const (
	ctxPrincipal = "tessera.principal"
	ctxAuthErr   = "tessera.auth_error"
	ctxExpired   = "tessera.session_expired"
)

// CurrentPrincipal is the request's principal, nil when nobody is signed in.
func CurrentPrincipal(c echo.Context) *Principal {
	p, _ := c.Get(ctxPrincipal).(*Principal)
	return p
}

// AuthError is why a presented credential was refused (malformed or unknown
// bearer token), nil otherwise.
func AuthError(c echo.Context) error {
	err, _ := c.Get(ctxAuthErr).(error)
	return err
}

// SessionExpired reports whether the request carried an expired session.
func SessionExpired(c echo.Context) bool {
	b, _ := c.Get(ctxExpired).(bool)
	return b
}

func init() {
	PageUser = func(c echo.Context) (string, string) {
		p := CurrentPrincipal(c)
		if p.Anonymous() {
			return "", ""
		}
		return p.Name, p.Role.String()
	}
	Actor = func(c echo.Context) string {
		p := CurrentPrincipal(c)
		if p.Anonymous() {
			return "anonymous"
		}
		if p.Via == "token" {
			return p.Name + " (token)"
		}
		return p.Name
	}
}

// HasBearer reports whether the request presents an Authorization header
// (such requests are authenticated by it alone and carry no cookies' authority).
func HasBearer(r *http.Request) bool { return r.Header.Get(echo.HeaderAuthorization) != "" }

// Identify resolves the principal of c and stores it (and any credential
// error) in the context. It never rejects: requireRole does.
func (a *Auth) Identify(c echo.Context) {
	p, err := a.identify(c)
	if err != nil {
		c.Set(ctxAuthErr, err)
		return
	}
	if p == nil && a.Cfg.AnonymousViewer {
		p = &Principal{Role: auth.RoleViewer, Via: "anonymous"}
	}
	if p != nil {
		c.Set(ctxPrincipal, p)
	}
}

// unknownToken is the 401 of a token Tessera did not issue or that was revoked.
const unknownToken = "unknown or revoked API token; create one on /settings/tokens or with `tessera token create`"

// bearerToken is the token of an Authorization header, or the 401 that says
// what is wrong with the header: not "Bearer <token>" at all (malformed),
// a token that is not a Tessera API token, or one with the tsr_ prefix that
// Tessera cannot have issued (unknown, as one it did not issue).
func bearerToken(h string) (string, error) {
	scheme, tok, _ := strings.Cut(strings.TrimSpace(h), " ")
	tok = strings.TrimSpace(tok)
	if !strings.EqualFold(scheme, "Bearer") || tok == "" || strings.ContainsAny(tok, " \t") {
		return "", Unauthorized("malformed Authorization header: expected \"Bearer <token>\" with a token from /settings/tokens or `tessera token create`")
	}
	if !strings.HasPrefix(tok, auth.TokenPrefix) {
		return "", Unauthorized("the bearer token is not a Tessera API token (those start with %s); create one on /settings/tokens or with `tessera token create`", auth.TokenPrefix)
	}
	if !auth.WellFormedToken(tok) {
		return "", Unauthorized("%s", unknownToken)
	}
	return tok, nil
}

func (a *Auth) identify(c echo.Context) (*Principal, error) {
	ctx := c.Request().Context()
	now := a.now()
	if h := c.Request().Header.Get(echo.HeaderAuthorization); h != "" {
		tok, err := bearerToken(h)
		if err != nil {
			return nil, err
		}
		t, err := a.Store.TokenByHash(ctx, auth.HashSecret(tok))
		if errors.Is(err, db.ErrNotFound) || (err == nil && t.RevokedAt != nil) {
			return nil, Unauthorized("%s", unknownToken)
		}
		if err != nil {
			return nil, err
		}
		if err := tokenExpired(t, now); err != nil {
			return nil, err
		}
		if t.Disabled {
			return nil, Unauthorized("the account %q of this API token is disabled; an admin can enable it again on /admin/users", t.UserName)
		}
		role := tokenRole(t)
		if t.LastUsedAt == nil || now.Sub(db.FromMillis(*t.LastUsedAt)) > time.Minute {
			if err := a.touchToken(ctx, t.ID, now); err != nil && !isWriteFault(err) {
				return nil, err
			}
		}
		p := &Principal{UserID: t.UserID, Name: t.UserName, Role: role, Via: "token", TokenID: t.ID}
		if t.ExpiresAt != nil {
			at := db.FromMillis(*t.ExpiresAt)
			p.TokenExpires = &at
		}
		return p, nil
	}
	sid := a.sessionSecret(c)
	if sid == "" {
		return nil, nil
	}
	id := auth.HashSecret(sid)
	s, err := a.Store.SessionByID(ctx, id)
	if errors.Is(err, db.ErrNotFound) {
		c.Set(ctxExpired, true)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if s.Disabled {
		return nil, nil
	}
	last := db.FromMillis(s.LastSeenAt)
	if a.sessionEnded(s, now) {
		c.Set(ctxExpired, true)
		return nil, a.endSession(ctx, id, now)
	}
	if now.Sub(last) > min(a.Cfg.IdleTimeout/20, time.Minute) {
		if err := a.touchSession(ctx, id, now); err != nil && !isWriteFault(err) {
			return nil, err
		}
	}
	role, err := auth.ParseRole(s.UserRole)
	if err != nil {
		return nil, err
	}
	return &Principal{UserID: s.UserID, Name: s.UserName, Role: role, Via: "session", SessionID: id, Timezone: s.UserTimezone}, nil
}

func (a *Auth) sessionSecret(c echo.Context) string {
	s, err := a.cookies.Get(c.Request(), sessionCookie)
	if err != nil || s.IsNew {
		return ""
	}
	v, _ := s.Values["sid"].(string)
	return v
}

// secure reports whether cookies for this request get the Secure flag.
func (a *Auth) secure(r *http.Request) bool {
	switch a.Cfg.SecureCookies {
	case "always":
		return true
	case "never":
		return false
	}
	return a.HTTPSRequest(r)
}

// HTTPSRequest reports whether r reached Tessera over HTTPS: TLS here, or a
// trusted proxy's X-Forwarded-Proto: https. Unlike SecureRequest it ignores
// --secure-cookies, so it is the rule for Strict-Transport-Security.
func (a *Auth) HTTPSRequest(r *http.Request) bool {
	return r.TLS != nil || (a.Cfg.TrustProxy && strings.EqualFold(r.Header.Get(echo.HeaderXForwardedProto), "https"))
}

// SecureRequest is the Secure flag for any cookie of this request (CSRF too).
func (a *Auth) SecureRequest(r *http.Request) bool { return a.secure(r) }

func (a *Auth) writeCookie(c echo.Context, sid string, maxAge int) error {
	s := sessions.NewSession(a.cookies, sessionCookie)
	s.Values["sid"] = sid
	s.Options = &sessions.Options{Path: "/", MaxAge: maxAge, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: a.secure(c.Request())}
	return a.cookies.Save(c.Request(), c.Response(), s)
}

// StartSession signs u in: a new server-side session and its cookie.
func (a *Auth) StartSession(c echo.Context, u db.User) error {
	if old := a.sessionSecret(c); old != "" { // never reuse a pre-login session id
		_ = a.Store.DeleteSession(c.Request().Context(), auth.HashSecret(old), false, a.now())
	}
	sid := auth.RandomString(32)
	if err := a.Store.CreateSession(c.Request().Context(), auth.HashSecret(sid), u, c.RealIP(), c.Request().UserAgent(), a.now()); err != nil {
		return err
	}
	if err := a.writeCookie(c, sid, int(a.Cfg.MaxLifetime/time.Second)); err != nil {
		return err
	}
	// The session's CSRF token from the first page on (see CSRFToken).
	c.SetCookie(&http.Cookie{Name: CSRFCookie, Value: csrfFor(sid), Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: a.secure(c.Request()), Expires: a.now().Add(24 * time.Hour)})
	return nil
}

// CSRFCookie is the name of the CSRF cookie (and form field).
const CSRFCookie = "_csrf"

// CSRFToken is the CSRF token of the request's signed-in session ("" when
// none): derived from the session's secret, which only the session cookie
// (signed, HttpOnly) carries. A token planted by someone else — a cookie
// set from a sibling domain or over plain HTTP — never matches it.
func (a *Auth) CSRFToken(c echo.Context) string {
	sid := a.sessionSecret(c)
	if sid == "" {
		return ""
	}
	return csrfFor(sid)
}

func csrfFor(sid string) string {
	m := hmac.New(sha256.New, []byte(sid))
	m.Write([]byte("tessera csrf token"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// EndSession signs the request's session out and clears its cookie.
//
// The cookie is cleared whatever the store answers: a browser is signed
// out even while the database cannot be written. The session's row then
// stays until it expires (idle timeout), unusable without the cookie's
// secret; the failure is logged.
func (a *Auth) EndSession(c echo.Context) error {
	if sid := a.sessionSecret(c); sid != "" {
		if err := a.Store.DeleteSession(c.Request().Context(), auth.HashSecret(sid), true, a.now()); err != nil {
			if a.Log != nil {
				a.Log.Warn("sign-out could not delete the session; the browser's cookie is cleared, the session row expires on its own", "err", err)
			}
		}
	}
	return a.writeCookie(c, "", -1)
}

// sessionEnded reports whether session s is past its idle timeout or its
// lifetime at now.
func (a *Auth) sessionEnded(s db.Session, now time.Time) bool {
	return now.Sub(db.FromMillis(s.LastSeenAt)) > a.Cfg.IdleTimeout || now.Sub(db.FromMillis(s.CreatedAt)) > a.Cfg.MaxLifetime
}

// tokenRole is what a token may do: its user's role, or less when the token
// was made with a lower role.
func tokenRole(t db.Token) auth.Role {
	role, _ := auth.ParseRole(t.UserRole)
	if t.Role != nil {
		if r, err := auth.ParseRole(*t.Role); err == nil && r < role {
			role = r
		}
	}
	return role
}

// canRevoke refuses a token signed-in principal revoking a token that may do
// more than itself: a leaked read-only token must not switch off the user's
// other credentials. Passwords (sessions) revoke any of the user's tokens.
func canRevoke(p *Principal, t db.Token) error {
	if p.Via != "token" {
		return nil
	}
	if r := tokenRole(t); r > p.Role {
		return &UserError{Status: http.StatusForbidden, Code: "forbidden",
			Message: fmt.Sprintf("the token you are signed in with (%s) cannot revoke a token that may do more (%s); use %s token or sign in with a password", p.Role, r, roleWithArticle(r))}
	}
	return nil
}

// roleWithArticle is r with its indefinite article: "an admin", "an
// operator", "a viewer".
func roleWithArticle(r auth.Role) string {
	if s := r.String(); s != "" && strings.ContainsRune("aeiou", rune(s[0])) {
		return "an " + s
	}
	return "a " + r.String()
}
