package db

import (
	"reflect"
	"testing"
)

// A block decodes to the rows it was encoded from; a damaged one (cut
// short, or with a byte changed) is refused or decodes to rows of its own
// block only, and a refused one leaves the rows read so far unchanged (the
// load then reads the block's status rows).
func TestStaleBlockRoundTrip(t *testing.T) {
	b := &baseFacts{}
	for i, c := range []string{"v2", "", "v1", "v2", "v2"} {
		b.Idx = append(b.Idx, 2048+int64(i*200))
		b.Status = append(b.Status, uint8(i%3))
		b.Flags = append(b.Flags, uint8(i%4))
		b.MatAt = append(b.MatAt, int64(1_700_000_000_000-i*7_777_777))
		b.Code = append(b.Code, c)
	}
	data := encodeBlock(b, 2, 0, len(b.Idx))
	got := &baseFacts{Idx: []int64{7}, Status: []uint8{1}, Flags: []uint8{1}, MatAt: []int64{1}, Code: []string{"x"}}
	if err := decodeBlock(data, 2, got, map[string]string{}); err != nil {
		t.Fatal(err)
	}
	want := &baseFacts{Idx: append([]int64{7}, b.Idx...), Status: append([]uint8{1}, b.Status...), Flags: append([]uint8{1}, b.Flags...),
		MatAt: append([]int64{1}, b.MatAt...), Code: append([]string{"x"}, b.Code...)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
	for cut := range len(data) {
		one := &baseFacts{Idx: []int64{7}, Status: []uint8{1}, Flags: []uint8{1}, MatAt: []int64{1}, Code: []string{"x"}}
		if err := decodeBlock(data[:cut], 2, one, map[string]string{}); err == nil || len(one.Idx) != 1 || len(one.Code) != 1 {
			t.Fatalf("cut at %d: err %v, %d rows", cut, err, len(one.Idx))
		}
	}
	for i := range data {
		bad := append([]byte(nil), data...)
		bad[i] ^= 0x5a
		one := &baseFacts{}
		if err := decodeBlock(bad, 2, one, map[string]string{}); err == nil {
			for _, x := range one.Idx {
				if x>>staleBlockShift != 2 {
					t.Fatalf("byte %d changed: decoded index %d outside the block", i, x)
				}
			}
		} else if len(one.Idx) != 0 {
			t.Fatalf("byte %d changed: refused but left %d rows", i, len(one.Idx))
		}
	}
}
