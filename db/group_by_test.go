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

// IndexBy maps each key to its item.
func TestIndexByMapsEachKey(t *testing.T) {
	got := db.IndexBy([]string{"b1", "a1", "c1"}, func(s string) byte { return s[0] })
	want := map[byte]string{'a': "a1", 'b': "b1", 'c': "c1"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("IndexBy = %v, want %v", got, want)
	}
}
