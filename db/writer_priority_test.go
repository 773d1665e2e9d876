package db_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tessera-dev/tessera/db"
)

// WaitUrgent returns at once with no urgent writer, waits while one is
// pending until it ends, and returns after its bound if it does not.
func TestWaitUrgent(t *testing.T) {
	t.Parallel()
	s, err := db.Open(filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.WaitUrgent(time.Hour) // none pending: returns at once, or the test times out

	end := s.BeginUrgent()
	if got := s.UrgentWriters(); got != 1 {
		t.Fatalf("UrgentWriters = %d, want 1", got)
	}
	done := make(chan struct{})
	go func() { s.WaitUrgent(time.Hour); close(done) }()
	select {
	case <-done:
		t.Fatal("WaitUrgent returned while an urgent writer was pending")
	case <-time.After(50 * time.Millisecond):
	}
	second := s.BeginUrgent()
	end()
	end() // ending twice counts once
	if got := s.UrgentWriters(); got != 1 {
		t.Fatalf("UrgentWriters = %d after one of two ended (twice), want 1", got)
	}
	select {
	case <-done:
		t.Fatal("WaitUrgent returned while the second urgent writer was pending")
	default:
	}
	second()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("WaitUrgent did not return when the urgent writers ended")
	}

	// Bounded: a writer that never ends holds a waiter at most max.
	never := s.BeginUrgent()
	defer never()
	bounded := make(chan struct{})
	go func() { s.WaitUrgent(20 * time.Millisecond); close(bounded) }()
	select {
	case <-bounded:
	case <-time.After(10 * time.Second):
		t.Fatal("WaitUrgent(20ms) did not return while an urgent writer stayed pending")
	}
}
