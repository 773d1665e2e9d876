package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// clientOpts are the flags every command that talks to a server shares.
type clientOpts struct {
	server string
	token  string
	json   bool
}

// addClientFlags puts --server, --token and --json on a command tree.
func addClientFlags(cmd *cobra.Command, o *clientOpts) {
	f := cmd.PersistentFlags()
	f.StringVar(&o.server, "server", "", "server URL (env TESSERA_URL, then the login config, then http://127.0.0.1:8080)")
	f.StringVar(&o.token, "token", "", "API token (env TESSERA_TOKEN, then the login config)")
	f.BoolVar(&o.json, "json", false, "print exact JSON instead of a table")
}

// answerJSON rewords --json for a command that answers with a sentence, not
// a table.
func answerJSON(cmd *cobra.Command) {
	cmd.PersistentFlags().Lookup("json").Usage = "print the server's answer as exact JSON instead of a sentence"
}

// clientConfig is what `tessera login` stores.
type clientConfig struct {
	Server string `json:"server"`
	Token  string `json:"token"`
}

// configPath is $TESSERA_CONFIG or the user's config dir/tessera/config.json.
func configPath() (string, error) {
	if p := os.Getenv("TESSERA_CONFIG"); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no config directory: %w (set TESSERA_CONFIG)", err)
	}
	return filepath.Join(dir, "tessera", "config.json"), nil
}

func readConfig() (clientConfig, error) {
	var c clientConfig
	p, err := configPath()
	if err != nil {
		return c, nil
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, usageErr("cannot read the login config %s (%s): %s; point TESSERA_CONFIG at the file tessera login writes, or pass --server and --token", p, configSource(), pathProblem(err))
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, usageErr("the login config %s (%s) is not valid JSON (%s); write it again with tessera login --server URL --token TOKEN", p, configSource(), jsonProblem(err))
	}
	return c, nil
}

// configSource says where the config's path came from, for its errors.
func configSource() string {
	if os.Getenv("TESSERA_CONFIG") != "" {
		return "TESSERA_CONFIG"
	}
	return "the default; set TESSERA_CONFIG for another"
}

// pathProblem is what is wrong with a file that could not be opened, in
// words: "is a directory", "permission denied", without Go's "open PATH:".
func pathProblem(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// jsonProblem is what is wrong with a JSON file, without Go's type names.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || err.Error() == "unexpected end of JSON input" {
		return "it ends early"
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s is not a string", te.Field)
	}
	return err.Error()
}

func writeConfig(c clientConfig) (string, error) {
	p, err := configPath()
	if err != nil {
		return "", err
	}
	fail := func(err error) (string, error) {
		return "", usageErr("cannot save the login config to %s (%s): %s; point TESSERA_CONFIG at a file you can write", p, configSource(), pathProblem(err))
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fail(err)
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp) // it holds the token
		return fail(err)
	}
	return p, nil
}

// client calls the Tessera API.
type client struct {
	base  string
	token string
	http  *http.Client
	// flags names the command's flags for the API's fields in error
	// messages (chunk_size → --chunk-size); see api_wording.go.
	flags fieldFlags
}

// withFlags sets the API field → flag names used in error messages.
func (c *client) withFlags(flags fieldFlags) *client {
	c.flags = flags
	return c
}

// newClient resolves server and token: flag, then environment, then the
// config file written by `tessera login`.
func (o *clientOpts) newClient() (*client, error) {
	server := firstNonEmpty(o.server, os.Getenv("TESSERA_URL"))
	token := firstNonEmpty(o.token, os.Getenv("TESSERA_TOKEN"))
	if server == "" || token == "" {
		// Only what the flags and variables leave out comes from the
		// file, so that a broken file blocks neither them nor tessera
		// login, which writes it again.
		cfg, err := readConfig()
		if err != nil {
			return nil, err
		}
		server = firstNonEmpty(server, cfg.Server, "http://127.0.0.1:8080")
		token = firstNonEmpty(token, cfg.Token)
	}
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageErr("server %q is not an http(s) URL such as http://127.0.0.1:8080", server)
	}
	return &client{base: strings.TrimRight(server, "/"), token: token, http: &http.Client{Timeout: 60 * time.Second}}, nil
}

// withClient is a command's RunE that first resolves the API client (as
// newClient does, naming the command's flags in the server's error messages
// when flags is not nil) and then runs run with it.
func (o *clientOpts) withClient(flags fieldFlags, run func(cmd *cobra.Command, args []string, c *client) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := o.newClient()
		if err != nil {
			return err
		}
		if flags != nil {
			c.withFlags(flags)
		}
		return run(cmd, args, c)
	}
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// apiError is the server's error answer.
type apiError struct {
	Status  int
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field"`
	// Reason, Hint and Params: what went wrong, and where to look next as
	// a kind the CLI words itself (api_wording.go), when the server says.
	Reason string            `json:"reason"`
	Hint   string            `json:"hint"`
	Params map[string]string `json:"params"`
	// flags are the command's names for the API's fields.
	flags fieldFlags
}

// Error is the server's error in the CLI's words (see api_wording.go).
func (e *apiError) Error() string {
	msg := e.Message
	if h, ok := cliHint(e.Hint, e.Params); ok && e.Reason != "" {
		msg = e.Reason + "; " + h
	}
	return fmt.Sprintf("server answered %d: %s", e.Status, e.flags.cliMessage(msg, e.Field))
}

// do sends a request and decodes a 2xx JSON answer into out. Errors carry exit
// codes: 2 for input the server rejected as invalid (400, 404, 409, 422), 3 for
// an unreachable server, authentication and server errors.
func (c *client) do(ctx context.Context, method, path string, body any, headers map[string]string, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return usageErr("bad request: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		return &exitError{ExitServer, fmt.Errorf("the Tessera server at %s is not trusted: %v (for a self-signed certificate, run the command with SSL_CERT_FILE=/path/to/cert.pem)", c.base, unwrapURLError(err))}
	}
	if err != nil {
		return &exitError{ExitServer, fmt.Errorf("cannot reach the Tessera server at %s: %v (start it with `tessera serve`, or pass --server / TESSERA_URL)", c.base, unwrapURLError(err))}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return &exitError{ExitServer, fmt.Errorf("reading the answer from %s: %v", c.base, err)}
	}
	if resp.StatusCode >= 300 {
		var wrap struct {
			Error apiError `json:"error"`
		}
		ae := &wrap.Error
		if json.Unmarshal(data, &wrap) != nil || ae.Message == "" {
			ae.Message = strings.TrimSpace(string(data))
			if len(ae.Message) > 200 || ae.Message == "" {
				ae.Message = http.StatusText(resp.StatusCode)
			}
		}
		ae.Status = resp.StatusCode
		ae.flags = c.flags
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			ae.Message += " (check --token, TESSERA_TOKEN or run tessera login)"
			return &exitError{ExitServer, ae}
		case http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity:
			return &exitError{ExitUsage, ae}
		}
		return &exitError{ExitServer, ae}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &exitError{ExitServer, fmt.Errorf("the server at %s did not answer JSON: %v", c.base, err)}
	}
	return nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// doOrPrint sends a request. With asJSON it prints the answer exactly as
// sent and says printed; else it decodes the answer into out for a table.
// A caller returns err when printed or err is set:
//
//	if printed, err := c.doOrPrint(cmd, o.json, "GET", path, nil, &v); printed || err != nil {
//		return err
//	}
func (c *client) doOrPrint(cmd *cobra.Command, asJSON bool, method, path string, body, out any) (printed bool, err error) {
	if !asJSON {
		return false, c.do(cmd.Context(), method, path, body, nil, out)
	}
	var raw map[string]any
	if err := c.do(cmd.Context(), method, path, body, nil, &raw); err != nil {
		return true, err
	}
	return true, printJSON(cmd.OutOrStdout(), raw)
}

// getPage fetches one page of a list endpoint once and returns its items both
// exactly as sent (for --json) and decoded into items (a pointer to a slice,
// for tables), with the page's next_cursor.
func (c *client) getPage(ctx context.Context, path, field string, items any) ([]json.RawMessage, string, error) {
	var page map[string]json.RawMessage
	if err := c.do(ctx, "GET", path, nil, nil, &page); err != nil {
		return nil, "", err
	}
	var raw []json.RawMessage
	var next string
	if err := json.Unmarshal(page[field], &raw); err != nil && page[field] != nil {
		return nil, "", &exitError{ExitServer, fmt.Errorf("unexpected answer from %s: %v", path, err)}
	}
	if err := json.Unmarshal(page[field], items); err != nil && page[field] != nil {
		return nil, "", &exitError{ExitServer, fmt.Errorf("unexpected answer from %s: %v", path, err)}
	}
	if n, ok := page["next_cursor"]; ok {
		_ = json.Unmarshal(n, &next)
	}
	return raw, next, nil
}

// printTable prints rows as the CLI's table (newTable) of header, cells
// making a row's cells (each shown through termText, so a tab or newline in
// one stays inside its cell).
func printTable[T any](w io.Writer, header string, rows []T, cells func(T) []any) error {
	tw := newTable(w, header)
	for _, r := range rows {
		c := cells(r)
		line := make([]string, len(c))
		for i, v := range c {
			line[i] = termText(fmt.Sprint(v))
		}
		io.WriteString(tw, strings.Join(line, "\t")+"\n")
	}
	return tw.Flush()
}

// newTable is the CLI's table on w (columns separated by tabs, aligned with
// two spaces) with its header line written.
func newTable(w io.Writer, header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	io.WriteString(tw, header+"\n") // the command's own: its tabs part the cells
	return tw
}
