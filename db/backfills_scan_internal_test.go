package db

import (
	"reflect"
	"strings"
	"testing"
)

// backfillColumns names every field of Backfill, in the order of its
// fields, which is the order scanBackfills scans them in: a column added
// to the struct and not here (or moved) fails.
func TestBackfillColumnsMatchTheStruct(t *testing.T) {
	var tags []string
	ty := reflect.TypeFor[Backfill]()
	for i := range ty.NumField() {
		tags = append(tags, ty.Field(i).Tag.Get("db"))
	}
	var cols []string
	for _, c := range strings.Split(backfillColumns, ",") {
		cols = append(cols, strings.TrimSpace(c))
	}
	if !reflect.DeepEqual(cols, tags) {
		t.Fatalf("backfillColumns:\n%q\nBackfill's db tags:\n%q", cols, tags)
	}
}
