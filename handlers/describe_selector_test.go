package handlers

import "testing"

func TestDescribeSelector(t *testing.T) {
	for in, want := range map[string]string{
		`{"type":"range","start":"2025-01-01","end":"2025-01-31"}`:                                  "range 2025-01-01 … 2025-01-31",
		`{"type":"explicit","count":3}`:                                                             "explicit list of 3 keys",
		`{"type":"filter","statuses":["missing","failed"],"start":"2025-01-01","end":"2025-02-01"}`: "only missing, failed within 2025-01-01 … 2025-02-01",
		`{"type":"filter","statuses":["stale"],"dimensions":{"region":["eu","us"]}}`:                "only stale, region = eu or us",
		`not json`: "not json",
	} {
		if got := describeSelector(in); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}
