package handlers_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tessera-dev/tessera/auth"
	"github.com/tessera-dev/tessera/db"
	"github.com/tessera-dev/tessera/testkit"
)

// chunkWS has an hourly and a daily asset: a backfill of both with one
// chunk size of 24 would cut the daily one into chunks of 24 days.
var chunkWS = testkit.Assets(
	testkit.Asset("cs.hourly", `{hourly: {start: "2025-01-01-00:00", end: "2025-01-03-00:00"}}`, "executor: {demo: {duration: 1ms}}"),
	testkit.Asset("cs.daily", "{daily: {start: 2025-01-01, end: 2025-01-15}}", "executor: {demo: {duration: 1ms}}"),
)

// TestNewBackfillChunkSizePerAsset: with two assets ticked, the form takes
// a chunk size for each (chunk_size.ASSET); the preview counts each asset's
// chunks by its own size, the backfill launched cuts them so (a daily chunk
// holds 7 days, an hourly one 24 hours), and a bad size is refused beside
// its field with nothing created. The API takes the same as chunk_sizes
// and refuses a size for an asset the backfill does not name.
func TestNewBackfillChunkSizePerAsset(t *testing.T) {
	t.Parallel()
	env, eng := pgEnvWith(t, chunkWS, false)
	c := env.Client(t, auth.RoleOperator)
	form := url.Values{"asset": {"cs.hourly", "cs.daily"}, "selector": {"range"}, "chunk_size": {"24"}, "chunk_size.cs.daily": {"7"},
		"max_concurrent_runs": {"2"}, "priority": {"0"}, "title": {"two sizes"}}
	doc := pgDoc(t, env.SessionPost(t, c, "/backfills/preview", form))
	chunks := map[string]string{}
	doc.Find(`[data-testid="preview-asset"]`).Each(func(_ int, s *goquery.Selection) {
		chunks[s.AttrOr("data-asset", "")] = strings.TrimSpace(s.Find("td").Eq(2).Text())
	})
	if chunks["cs.hourly"] != "2" || chunks["cs.daily"] != "2" {
		t.Fatalf("preview chunks %v, want 2 of 24 hours and 2 of 7 days", chunks)
	}
	for _, bad := range []struct{ v, want string }{{"0", "at least 1"}, {"seven", "whole number"}} {
		f := url.Values{}
		for k, v := range form {
			f[k] = v
		}
		f.Set("chunk_size.cs.daily", bad.v)
		d := pgDoc(t, env.SessionPost(t, c, "/backfills", f))
		if msg := d.Find(`[data-testid="error-chunk_size.cs.daily"]`).Text(); !strings.Contains(msg, "chunk size of cs.daily") || !strings.Contains(msg, bad.want) {
			t.Errorf("chunk_size.cs.daily=%s: message %q", bad.v, msg)
		}
	}
	if n := pgCountBackfills(t, env); n != 0 {
		t.Fatalf("bad sizes created %d backfills", n)
	}
	resp := env.SessionPost(t, c, "/backfills", form)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("launch: %d", resp.StatusCode)
	}
	bfs, err := env.Store.Backfills(context.Background(), nil, "", 0, 10)
	if err != nil || len(bfs) != 1 {
		t.Fatalf("backfills: %d %v", len(bfs), err)
	}
	b := bfs[0]
	segs, err := db.Segments(context.Background(), env.Store.RawReader(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range segs {
		keys, _, err := eng.SegmentKeys(context.Background(), b, s)
		if err != nil {
			t.Fatal(err)
		}
		size := s.Size(b.ChunkSize)
		if (s.Asset == "cs.daily" && (size != 7 || s.Chunks != 2 || len(keys) != 14)) || (s.Asset == "cs.hourly" && (size != 24 || s.Chunks != 2 || len(keys) != 48)) {
			t.Errorf("segment %s: chunks of %d, %d chunks, %d keys", s.Asset, size, s.Chunks, len(keys))
		}
	}

	// The API: chunk_sizes, checked.
	for body, want := range map[string]string{
		`{"assets":["cs.daily"],"selector":{"type":"range"},"chunk_sizes":{"cs.hourly":3}}`:  "chunk_sizes.cs.hourly",
		`{"assets":["cs.daily"],"selector":{"type":"range"},"chunk_sizes":{"cs.daily":0}}`:   "chunk_sizes.cs.daily",
		`{"assets":["cs.daily"],"selector":{"type":"range"},"chunk_sizes":{"cs.daily":"x"}}`: "chunk_sizes",
	} {
		r := env.Post(t, "/api/v1/backfills", body)
		var e struct {
			Error struct{ Field, Message string }
		}
		decode(t, r, &e)
		if r.StatusCode != http.StatusBadRequest || !strings.HasPrefix(e.Error.Field, want) {
			t.Errorf("%s: %d %+v, want 400 on %s", body, r.StatusCode, e.Error, want)
		}
	}
	r := env.Post(t, "/api/v1/backfills", `{"assets":["cs.hourly","cs.daily"],"selector":{"type":"range"},"chunk_size":24,"chunk_sizes":{"cs.daily":7}}`)
	var made struct {
		TotalChunks int64 `json:"total_chunks"`
	}
	decode(t, r, &made)
	if r.StatusCode != http.StatusCreated || made.TotalChunks != 4 {
		t.Errorf("API create with chunk_sizes: %d, %d chunks, want 4", r.StatusCode, made.TotalChunks)
	}
}
