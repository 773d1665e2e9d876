package db

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Name is what pages, titles and breadcrumbs call a backfill: its title,
// or, untitled, "Backfill of" its assets (at most three named). Its id is a
// detail, never its name.
func (b Backfill) Name() string {
	if t := strings.TrimSpace(b.Title); t != "" {
		return t
	}
	var assets []string
	_ = json.Unmarshal([]byte(b.Assets), &assets)
	switch n := len(assets); {
	case n == 0:
		return "Backfill"
	case n <= 3:
		return "Backfill of " + strings.Join(assets, ", ")
	default:
		return "Backfill of " + strings.Join(assets[:2], ", ") + " and " + strconv.Itoa(n-2) + " more assets"
	}
}
