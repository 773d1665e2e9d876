package deploy_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/tessera-dev/tessera/db"
)

// compose is the part of a compose file the test reads.
type compose struct {
	Services map[string]struct {
		Build *struct {
			Context    string `yaml:"context"`
			Dockerfile string `yaml:"dockerfile"`
		} `yaml:"build"`
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
		Ports       []string          `yaml:"ports"`
		DependsOn   any               `yaml:"depends_on"`
		Healthcheck *struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
}

// interpolated is s with compose's ${NAME:?message} and ${NAME} replaced
// by vars (as docker compose does when they are set).
func interpolated(s string, vars map[string]string) string {
	return regexp.MustCompile(`\$\{(\w+)(:\?[^}]*)?\}`).ReplaceAllStringFunc(s, func(m string) string {
		name := regexp.MustCompile(`\$\{(\w+)`).FindStringSubmatch(m)[1]
		return vars[name]
	})
}

// TestComposeRunsThreeInstancesOnPostgres: deploy/compose.yaml is valid
// YAML (its anchors merged) with PostgreSQL, a proxy and three Tessera
// instances built from the repository's one Dockerfile; every instance
// has the same PostgreSQL URL (a connection string serve accepts), the
// same session keys (required, never a default), the same workspace file
// (which exists) and waits for PostgreSQL to be healthy; the proxy's
// Caddyfile sends to each instance and checks /readyz.
func TestComposeRunsThreeInstancesOnPostgres(t *testing.T) {
	raw, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("compose.yaml is not valid YAML: %v", err)
	}
	var instances []string
	for name, s := range c.Services {
		if s.Image == "tessera:local" {
			instances = append(instances, name)
		}
	}
	slices.Sort(instances)
	if !slices.Equal(instances, []string{"tessera-1", "tessera-2", "tessera-3"}) {
		t.Fatalf("instances %v, want tessera-1, -2, -3", instances)
	}
	pg, ok := c.Services["postgres"]
	if !ok || !strings.HasPrefix(pg.Image, "postgres:") || pg.Healthcheck == nil || !strings.Contains(strings.Join(pg.Healthcheck.Test, " "), "pg_isready") {
		t.Fatalf("postgres service: %+v", pg)
	}
	vars := map[string]string{"POSTGRES_PASSWORD": "s3cret", "TESSERA_SESSION_KEYS": "0123456789abcdef0123"}
	if pg.Environment["POSTGRES_PASSWORD"] != "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}" {
		t.Errorf("PostgreSQL's password must be required from the environment: %q", pg.Environment["POSTGRES_PASSWORD"])
	}
	first := c.Services["tessera-1"]
	for _, name := range instances {
		s := c.Services[name]
		if s.Build == nil || s.Build.Context != ".." || s.Build.Dockerfile != "Dockerfile" {
			t.Errorf("%s: not built from the repository's Dockerfile: %+v", name, s.Build)
		} else if _, err := os.Stat("../Dockerfile"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		loc, err := db.ParseLocation(interpolated(s.Environment["TESSERA_DB"], vars))
		if err != nil || loc.Dialect != db.Postgres || !strings.Contains(loc.URL, "@postgres:5432/"+pg.Environment["POSTGRES_DB"]) ||
			!strings.Contains(loc.URL, pg.Environment["POSTGRES_USER"]+":s3cret@") {
			t.Errorf("%s: TESSERA_DB %q is not the postgres service's database (%v)", name, s.Environment["TESSERA_DB"], err)
		}
		if keys := s.Environment["TESSERA_SESSION_KEYS"]; !strings.HasPrefix(keys, "${TESSERA_SESSION_KEYS:?") {
			t.Errorf("%s: TESSERA_SESSION_KEYS %q must come, required, from the environment", name, keys)
		}
		if s.Environment["TESSERA_TRUST_PROXY"] != "true" {
			t.Errorf("%s: behind the proxy, TESSERA_TRUST_PROXY must be true", name)
		}
		if !slices.Equal(s.Command, first.Command) || !slices.Equal(s.Volumes, first.Volumes) || s.Environment["TESSERA_DB"] != first.Environment["TESSERA_DB"] ||
			s.Environment["TESSERA_SESSION_KEYS"] != first.Environment["TESSERA_SESSION_KEYS"] {
			t.Errorf("%s differs from tessera-1: every instance needs the same database, keys and workspace", name)
		}
		i := slices.Index(s.Command, "--workspace")
		if len(s.Command) == 0 || s.Command[0] != "serve" || i < 0 || i+1 >= len(s.Command) {
			t.Errorf("%s: command %v, want serve --workspace FILE", name, s.Command)
			continue
		}
		mounted := false
		for _, v := range s.Volumes {
			parts := strings.Split(v, ":")
			if len(parts) >= 2 && parts[1] == s.Command[i+1] {
				mounted = true
				if _, err := os.Stat(parts[0]); err != nil {
					t.Errorf("%s: the workspace mounted from %s: %v", name, parts[0], err)
				}
			}
		}
		if !mounted {
			t.Errorf("%s: --workspace %s is not mounted", name, s.Command[i+1])
		}
		dep, _ := s.DependsOn.(map[string]any)
		if pgDep, _ := dep["postgres"].(map[string]any); pgDep["condition"] != "service_healthy" {
			t.Errorf("%s: depends_on %v, want postgres service_healthy", name, s.DependsOn)
		}
	}
	proxy, ok := c.Services["proxy"]
	if !ok || len(proxy.Ports) != 1 || !slices.Contains(proxy.Volumes, "./Caddyfile:/etc/caddy/Caddyfile:ro") {
		t.Fatalf("proxy service: %+v", proxy)
	}
	caddy, err := os.ReadFile("Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	up := regexp.MustCompile(`(?m)^\s*reverse_proxy (.+) \{$`).FindStringSubmatch(string(caddy))
	if up == nil || !slices.Equal(strings.Fields(up[1]), []string{"tessera-1:8080", "tessera-2:8080", "tessera-3:8080"}) {
		t.Errorf("the Caddyfile's upstreams: %v", up)
	}
	if !strings.Contains(string(caddy), "health_uri /readyz") {
		t.Error("the proxy does not check /readyz")
	}
}
