package testkit

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// APIRequest sends one API request to the server at url with the bearer
// token tok (a JSON Content-Type when body is not empty; hdr adds name,
// value pairs) and returns the response with its decoded JSON body. An
// answer that is not JSON fails the test.
func APIRequest(t testing.TB, url, tok, method, path, body string, hdr ...string) (*http.Response, any) {
	t.Helper()
	req, err := http.NewRequest(method, url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp := Send(t, http.DefaultClient, req, hdr...)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp, out
}
