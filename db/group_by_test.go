package db_test

import (
	"reflect"
	"testing"

	"github.com/tessera-dev/tessera/db"
)

// GroupBy keeps the groups in order of their key's first appearance and
// each group's items in their order.
func TestGroupByKeepsFirstAppearanceOrder(t *testing.T) {
	got := db.GroupBy([]string{"b1", "a1", "b2", "c1", "a2"}, func(s string) byte { return s[0] })
	want := [][]string{{"b1", "b2"}, {"a1", "a2"}, {"c1"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GroupBy = %v, want %v", got, want)
	}
	if got := db.GroupBy(nil, func(s string) byte { return s[0] }); len(got) != 0 {
		t.Fatalf("GroupBy(nil) = %v, want no group", got)
	}
}
