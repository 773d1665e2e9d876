package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/testkit"
)

// routeExpectation is the least role a route needs, with a sample path for
// its parameters. Every route of the router must be listed here: a new route
// without an entry fails TestRouteMatrix.
type routeExpectation struct {
	role   auth.Role
	sample string // concrete path; "" = the route path itself
	logout bool   // ends the session: run on a throwaway one, a redirect to /login is its success
	// sessionOnly: API tokens are refused (403) whatever their role.
	sessionOnly bool
	// scrape: a machine's endpoint that answers 401, not a sign-in page.
	scrape bool
}

var routeTable = map[string]routeExpectation{
	"GET /healthz":             {role: auth.RolePublic},
	"GET /api/v1/openapi.json": {role: auth.RolePublic},
	"GET /readyz":              {role: auth.RolePublic},
	"GET /metrics":             {role: auth.RoleViewer, scrape: true},
	"GET /static/*":            {role: auth.RolePublic, sample: "/static/app.css"},
	"GET /favicon.ico":         {role: auth.RolePublic},
	"GET /fault-banner":        {role: auth.RolePublic},
	"GET /login":               {role: auth.RolePublic},
	"POST /login":              {role: auth.RolePublic},
	"POST /logout":             {role: auth.RolePublic, logout: true},
	"GET /api/v1/me":           {role: auth.RoleViewer},

	"GET /settings/tokens":                   {role: auth.RoleViewer},
	"POST /settings/tokens":                  {role: auth.RoleViewer},
	"POST /settings/tokens/:id/revoke":       {role: auth.RoleViewer, sample: "/settings/tokens/999999/revoke"},
	"GET /assets/:key/active-backfills":      {role: auth.RoleViewer, sample: "/assets/raw.events/active-backfills"},
	"GET /settings/password":                 {role: auth.RoleViewer},
	"POST /settings/password":                {role: auth.RoleViewer, sessionOnly: true},
	"GET /settings/timezone":                 {role: auth.RoleViewer},
	"POST /settings/timezone":                {role: auth.RoleViewer},
	"GET /admin/users":                       {role: auth.RoleAdmin},
	"POST /admin/users":                      {role: auth.RoleAdmin},
	"POST /admin/users/:id/role":             {role: auth.RoleAdmin, sample: "/admin/users/VICTIM/role"},
	"POST /admin/users/:id/disable":          {role: auth.RoleAdmin, sample: "/admin/users/VICTIM/disable"},
	"POST /admin/users/:id/enable":           {role: auth.RoleAdmin, sample: "/admin/users/VICTIM/enable"},
	"POST /admin/users/:id/password":         {role: auth.RoleAdmin, sample: "/admin/users/VICTIM/password"},
	"POST /admin/users/:id/unlock":           {role: auth.RoleAdmin, sample: "/admin/users/VICTIM/unlock"},
	"POST /admin/workspace/reload":           {role: auth.RoleAdmin},
	"GET /":                                  {role: auth.RoleViewer},
	"GET /assets/:key":                       {role: auth.RoleViewer, sample: "/assets/raw.events"},
	"GET /assets/:key/partitions/:partition": {role: auth.RoleViewer, sample: "/assets/crm.accounts_snapshot/partitions/acme"},

	// Backfill pages (issue 5).
	"GET /backfills":              {role: auth.RoleViewer},
	"GET /backfills/new":          {role: auth.RoleViewer},
	"POST /backfills/preview":     {role: auth.RoleViewer},
	"POST /backfills":             {role: auth.RoleOperator},
	"GET /backfills/stream":       {role: auth.RoleViewer, sample: "/backfills/stream?once=1"},
	"GET /backfills/active":       {role: auth.RoleViewer},
	"GET /backfills/selection":    {role: auth.RoleViewer, sample: "/backfills/selection?asset=raw.events"},
	"GET /backfills/:id":          {role: auth.RoleViewer, sample: "/backfills/nope"},
	"GET /backfills/:id/summary":  {role: auth.RoleViewer, sample: "/backfills/nope/summary"},
	"GET /backfills/:id/chunks":   {role: auth.RoleViewer, sample: "/backfills/nope/chunks"},
	"GET /backfills/:id/gantt":    {role: auth.RoleViewer, sample: "/backfills/nope/gantt"},
	"GET /runs":                   {role: auth.RoleViewer},
	"GET /backfills/:id/grid":     {role: auth.RoleViewer, sample: "/backfills/nope/grid"},
	"GET /backfills/:id/events":   {role: auth.RoleViewer, sample: "/backfills/nope/events"},
	"GET /backfills/:id/actions":  {role: auth.RoleViewer, sample: "/backfills/nope/actions"},
	"GET /backfills/:id/stream":   {role: auth.RoleViewer, sample: "/backfills/nope/stream"},
	"POST /backfills/:id/:action": {role: auth.RoleOperator, sample: "/backfills/nope/pause"},
	"GET /runs/:id":               {role: auth.RoleViewer, sample: "/runs/nope"},
	"GET /runs/:id/live":          {role: auth.RoleViewer, sample: "/runs/nope/live"},
	"GET /runs/:id/stream":        {role: auth.RoleViewer, sample: "/runs/nope/stream"},

	"GET /api/v1/assets":                      {role: auth.RoleViewer},
	"GET /api/v1/assets/:key/partitions":      {role: auth.RoleViewer, sample: "/api/v1/assets/raw.events/partitions"},
	"POST /api/v1/assets/:key/partition-keys": {role: auth.RoleOperator, sample: "/api/v1/assets/partners.feeds/partition-keys"},
	"POST /api/v1/materializations":           {role: auth.RoleOperator},

	"POST /api/v1/backfills/preview":          {role: auth.RoleViewer},
	"POST /api/v1/backfills":                  {role: auth.RoleOperator},
	"GET /api/v1/backfills":                   {role: auth.RoleViewer},
	"GET /api/v1/backfills/:id":               {role: auth.RoleViewer, sample: "/api/v1/backfills/999999"},
	"GET /api/v1/backfills/:id/chunks":        {role: auth.RoleViewer, sample: "/api/v1/backfills/999999/chunks"},
	"GET /api/v1/backfills/:id/events":        {role: auth.RoleViewer, sample: "/api/v1/backfills/999999/events"},
	"POST /api/v1/backfills/:id/pause":        {role: auth.RoleOperator, sample: "/api/v1/backfills/999999/pause"},
	"POST /api/v1/backfills/:id/resume":       {role: auth.RoleOperator, sample: "/api/v1/backfills/999999/resume"},
	"POST /api/v1/backfills/:id/cancel":       {role: auth.RoleOperator, sample: "/api/v1/backfills/999999/cancel"},
	"POST /api/v1/backfills/:id/retry-failed": {role: auth.RoleOperator, sample: "/api/v1/backfills/999999/retry-failed"},
	"GET /api/v1/runs/:id":                    {role: auth.RoleViewer, sample: "/api/v1/runs/nope"},
	"GET /api/v1/runs":                        {role: auth.RoleViewer},
	"POST /api/v1/runs/:id/complete":          {role: auth.RoleOperator, sample: "/api/v1/runs/nope/complete"},
	"GET /api/v1/conflicts":                   {role: auth.RoleViewer},
	"GET /api/v1/status":                      {role: auth.RoleViewer},
	"POST /api/v1/workspace/reload":           {role: auth.RoleAdmin},
	"GET /api/v1/users":                       {role: auth.RoleAdmin},
	"POST /api/v1/users":                      {role: auth.RoleAdmin},
	"POST /api/v1/users/:id":                  {role: auth.RoleAdmin, sample: "/api/v1/users/999999"},
	"GET /api/v1/tokens":                      {role: auth.RoleViewer},
	"POST /api/v1/tokens":                     {role: auth.RoleViewer},
	"POST /api/v1/tokens/:id/revoke":          {role: auth.RoleViewer, sample: "/api/v1/tokens/999999/revoke"},

	// The lineage graph (issue 24; web/routes.go).
	"GET /lineage": {role: auth.RoleViewer},

	// The staleness endpoints (issue 6; web/routes.go).
	"GET /status":                                                {role: auth.RoleViewer},
	"GET /status.json":                                           {role: auth.RoleViewer},
	"GET /status.csv":                                            {role: auth.RoleViewer},
	"GET /status/:key/badge.svg":                                 {role: auth.RoleViewer, sample: "/status/raw.events/badge.svg"},
	"GET /assets/:key/gaps":                                      {role: auth.RoleViewer, sample: "/assets/raw.events/gaps"},
	"POST /assets/:key/partitions/:partition/taint":              {role: auth.RoleAdmin, sample: "/assets/crm.accounts_snapshot/partitions/acme/taint"},
	"POST /assets/:key/partitions/:partition/clear-taint":        {role: auth.RoleAdmin, sample: "/assets/crm.accounts_snapshot/partitions/acme/clear-taint"},
	"GET /api/v1/assets/:key/staleness":                          {role: auth.RoleViewer, sample: "/api/v1/assets/raw.events/staleness"},
	"GET /api/v1/assets/:key/partitions/:partition/history":      {role: auth.RoleViewer, sample: "/api/v1/assets/crm.accounts_snapshot/partitions/acme/history"},
	"POST /api/v1/assets/:key/partitions/:partition/taint":       {role: auth.RoleAdmin, sample: "/api/v1/assets/crm.accounts_snapshot/partitions/acme/taint"},
	"POST /api/v1/assets/:key/partitions/:partition/clear-taint": {role: auth.RoleAdmin, sample: "/api/v1/assets/crm.accounts_snapshot/partitions/acme/clear-taint"},
	"GET /api/v1/assets/:key/watermark":                          {role: auth.RoleViewer, sample: "/api/v1/assets/raw.events/watermark"},
	"POST /api/v1/assets/:key/watermark":                         {role: auth.RoleOperator, sample: "/api/v1/assets/raw.events/watermark"},
	"GET /api/v1/assets/:key/gaps":                               {role: auth.RoleViewer, sample: "/api/v1/assets/raw.events/gaps"},

	// The Automation pages and the schedules API (issue
	// 22; web/routes.go). The default workspace declares the
	// schedule raw.events.hourly.
	"GET /automation":                      {role: auth.RoleViewer},
	"GET /schedules/:name":                 {role: auth.RoleViewer, sample: "/schedules/raw.events.hourly"},
	"POST /schedules/:name/:action":        {role: auth.RoleOperator, sample: "/schedules/nope/pause"},
	"GET /api/v1/schedules":                {role: auth.RoleViewer},
	"GET /api/v1/schedules/:name":          {role: auth.RoleViewer, sample: "/api/v1/schedules/raw.events.hourly"},
	"GET /api/v1/schedules/:name/ticks":    {role: auth.RoleViewer, sample: "/api/v1/schedules/raw.events.hourly/ticks"},
	"GET /api/v1/schedules/:name/preview":  {role: auth.RoleViewer, sample: "/api/v1/schedules/nope/preview"},
	"POST /api/v1/schedules/:name/pause":   {role: auth.RoleOperator, sample: "/api/v1/schedules/nope/pause"},
	"POST /api/v1/schedules/:name/resume":  {role: auth.RoleOperator, sample: "/api/v1/schedules/nope/resume"},
	"POST /api/v1/schedules/:name/trigger": {role: auth.RoleOperator, sample: "/api/v1/schedules/nope/trigger"},

	// The sensors' pages and API (issue 22;
	// web/routes.go). The default workspace declares the push sensor
	// crm.account_changed; the mutations are checked on an unknown sensor, so
	// that an allowed role meets a 404 and writes nothing.
	"GET /sensors":                          {role: auth.RoleViewer},
	"GET /sensors/:name":                    {role: auth.RoleViewer, sample: "/sensors/crm.account_changed"},
	"POST /sensors/:name/cursor":            {role: auth.RoleAdmin, sample: "/sensors/nope/cursor"},
	"POST /sensors/:name/:action":           {role: auth.RoleOperator, sample: "/sensors/nope/pause"},
	"GET /api/v1/sensors":                   {role: auth.RoleViewer},
	"GET /api/v1/sensors/:name":             {role: auth.RoleViewer, sample: "/api/v1/sensors/crm.account_changed"},
	"GET /api/v1/sensors/:name/evaluations": {role: auth.RoleViewer, sample: "/api/v1/sensors/crm.account_changed/evaluations"},
	"GET /api/v1/sensors/:name/events":      {role: auth.RoleViewer, sample: "/api/v1/sensors/crm.account_changed/events"},
	"GET /api/v1/sensors/:name/run-keys":    {role: auth.RoleViewer, sample: "/api/v1/sensors/crm.account_changed/run-keys"},
	"POST /api/v1/sensors/:name/events":     {role: auth.RoleOperator, sample: "/api/v1/sensors/nope/events"},
	"POST /api/v1/sensors/:name/evaluate":   {role: auth.RoleOperator, sample: "/api/v1/sensors/nope/evaluate"},
	"POST /api/v1/sensors/:name/pause":      {role: auth.RoleOperator, sample: "/api/v1/sensors/nope/pause"},
	"POST /api/v1/sensors/:name/resume":     {role: auth.RoleOperator, sample: "/api/v1/sensors/nope/resume"},
	"POST /api/v1/sensors/:name/cursor":     {role: auth.RoleAdmin, sample: "/api/v1/sensors/nope/cursor"},
}

// The API's catch-all 404 answers every method and needs no role.
const apiFallback = "/api/v1/*"

type identity struct {
	name string
	role auth.Role // RolePublic = anonymous
}

// TestRouteMatrix checks every route of the router for anonymous, viewer,
// operator and admin, each through a browser session and a bearer token:
// redirect to /login (pages) or 401 (API, bad tokens) without credentials,
// 403 below the route's role, anything else at or above it.
func TestRouteMatrix(t *testing.T) {
	t.Parallel()
	env := testkit.New(t, testkit.Options{})
	victim := env.CreateUser(t, "victim", auth.RoleViewer, testkit.TestPassword)

	ids := []identity{{"anonymous", auth.RolePublic}, {"viewer", auth.RoleViewer}, {"operator", auth.RoleOperator}, {"admin", auth.RoleAdmin}}
	sessions := map[auth.Role]*http.Client{auth.RolePublic: env.Anon()}
	tokens := map[auth.Role]string{auth.RolePublic: "tsr_" + strings.Repeat("A", 43)} // well-formed, unknown
	for _, id := range ids[1:] {
		sessions[id.role] = env.Client(t, id.role)
		tokens[id.role] = env.Token(t, id.role)
	}

	seen := map[string]bool{}
	checked := 0
	for _, r := range env.Echo.Routes() {
		if r.Path == apiFallback {
			continue
		}
		key := r.Method + " " + r.Path
		if seen[key] {
			continue
		}
		seen[key] = true
		// Every GET route also answers HEAD, with the same roles.
		exp, ok := routeTable[strings.Replace(key, "HEAD ", "GET ", 1)]
		if !ok {
			t.Errorf("route %q has no entry in the route matrix (web/auth_matrix_test.go routeTable): add it with its least role", key)
			continue
		}
		path := exp.sample
		if path == "" {
			path = r.Path
		}
		path = strings.ReplaceAll(path, "VICTIM", fmt.Sprint(victim))
		for _, id := range ids {
			for _, mode := range []string{"session", "bearer"} {
				var client *http.Client
				var token string
				if mode == "session" {
					client = sessions[id.role]
					if exp.logout && id.role != auth.RolePublic {
						client = env.Client(t, id.role)
					}
				} else {
					client, token = env.Anon(), tokens[id.role]
				}
				status, loc := matrixDo(t, env, client, r.Method, path, token)
				got := outcome(status, loc)
				want := expected(exp, id, mode, path)
				if exp.logout && want == "allowed" && got == "login" {
					got = "allowed"
				}
				if got != want {
					t.Errorf("%s as %s via %s: got %s (HTTP %d %s), want %s", key, id.name, mode, got, status, loc, want)
				}
				checked++
			}
		}
	}
	for key := range routeTable {
		if !seen[key] {
			t.Errorf("route matrix entry %q matches no route of the router: remove it", key)
		}
	}
	if checked < 8*30 {
		t.Fatalf("only %d checks ran", checked)
	}
}

func expected(exp routeExpectation, id identity, mode, path string) string {
	switch {
	case exp.role == auth.RolePublic:
		return "allowed"
	case id.role == auth.RolePublic && (mode == "bearer" || exp.scrape || strings.HasPrefix(path, "/api/")):
		return "401"
	case id.role == auth.RolePublic:
		return "login"
	case id.role < exp.role, exp.sessionOnly && mode == "bearer":
		return "403"
	}
	return "allowed"
}

func outcome(status int, loc string) string {
	switch {
	case status == http.StatusUnauthorized:
		return "401"
	case status == http.StatusForbidden:
		return "403"
	case status >= 300 && status < 400 && strings.HasPrefix(loc, "/login"):
		return "login"
	}
	return "allowed"
}

func matrixDo(t *testing.T, env *testkit.Env, c *http.Client, method, path, token string) (int, string) {
	t.Helper()
	var body io.Reader
	ctype := ""
	if method == http.MethodPost {
		if strings.HasPrefix(path, "/api/") {
			body, ctype = strings.NewReader(`{}`), "application/json"
		} else {
			f := url.Values{}
			if token == "" {
				f.Set("_csrf", env.CSRF(t, c))
			}
			body, ctype = strings.NewReader(f.Encode()), "application/x-www-form-urlencoded"
		}
	}
	req, err := http.NewRequest(method, env.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	} else if method == http.MethodPost {
		req.Header.Set("X-CSRF-Token", env.CSRF(t, c))
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}
