package auth

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestHashSlots: at most Size checks hold a slot; a waiter gets the slot
// another gives back, and ErrHashBusy when its context ends first.
func TestHashSlots(t *testing.T) {
	s := NewHashSlots(2)
	r1, err1 := s.Acquire(context.Background(), false)
	busy := func(priority bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if _, err := s.Acquire(ctx, priority); !errors.Is(err, ErrHashBusy) {
			t.Fatalf("acquire (priority %v) while the slots it may take are held: %v, want ErrHashBusy", priority, err)
		}
	}
	busy(false) // the second slot is kept for priority checks
	r2, err2 := s.Acquire(context.Background(), true)
	if err1 != nil || err2 != nil || s.Size() != 2 {
		t.Fatalf("two slots: %v %v", err1, err2)
	}
	busy(true)
	got := make(chan error)
	go func() {
		r, err := s.Acquire(context.Background(), false)
		if err == nil {
			r()
		}
		got <- err
	}()
	r1()
	if err := <-got; err != nil {
		t.Fatalf("waiter after a release: %v", err)
	}
	r2()
	one := NewHashSlots(0)
	if one.Size() != 1 {
		t.Fatal("zero slots must mean one")
	}
	r, err := one.Acquire(context.Background(), false) // one slot: nothing kept back
	if err != nil {
		t.Fatal(err)
	}
	r()
}

// TestHashSlotsFor: two per core, and at most a 64th of memory.
func TestHashSlotsFor(t *testing.T) {
	for _, c := range []struct {
		mem  uint64
		cpus int
		want int
	}{
		{24 << 30, 2, 4},   // this machine: cores bound it
		{24 << 30, 64, 20}, // memory bounds it: 24 GiB / 64 / 19 MiB
		{1 << 30, 2, 1},    // a small container
		{0, 8, 1},
	} {
		if got := HashSlotsFor(c.mem, c.cpus); got != c.want {
			t.Errorf("HashSlotsFor(%d, %d) = %d, want %d", c.mem, c.cpus, got, c.want)
		}
	}
	if n := DefaultHashSlots(); n < 1 {
		t.Fatalf("DefaultHashSlots() = %d", n)
	}
}
