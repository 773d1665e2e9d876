package auth

import (
	"bufio"
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// HashMemoryBytes is what one password check holds while it runs (argon2id's
// memory parameter).
const HashMemoryBytes = argonMemory * 1024

// ErrHashBusy is returned when no password check slot freed up in time.
var ErrHashBusy = errors.New("every password check slot is busy")

// HashSlots bounds how many password checks run at once, so that a storm of
// sign-ins costs a bounded amount of memory (HashMemoryBytes each) instead
// of 19 MiB per request in flight. With two slots or more, one is kept for
// priority checks (sign-ins from an address the account signed in from
// before): a storm of strangers cannot make its owner wait behind it.
type HashSlots struct {
	all      chan struct{} // every check takes one of these
	ordinary chan struct{} // and checks without priority one of these first
}

// NewHashSlots allows n checks at once (at least 1).
func NewHashSlots(n int) *HashSlots {
	n = max(1, n)
	return &HashSlots{all: make(chan struct{}, n), ordinary: make(chan struct{}, max(1, n-1))}
}

// Size is how many checks may run at once.
func (h *HashSlots) Size() int { return cap(h.all) }

// Acquire waits for a slot until ctx ends (ErrHashBusy then); release gives
// it back. A priority check may take the slot kept for priority.
func (h *HashSlots) Acquire(ctx context.Context, priority bool) (release func(), err error) {
	if priority {
		if err := take(ctx, h.all); err != nil {
			return nil, err
		}
		return func() { <-h.all }, nil
	}
	if err := take(ctx, h.ordinary); err != nil {
		return nil, err
	}
	if err := take(ctx, h.all); err != nil {
		<-h.ordinary
		return nil, err
	}
	return func() { <-h.all; <-h.ordinary }, nil
}

func take(ctx context.Context, ch chan struct{}) error {
	select {
	case ch <- struct{}{}:
		return nil
	default:
	}
	select {
	case ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ErrHashBusy
	}
}

// HashSlotsFor is the default number of slots for a machine with memBytes of
// memory and cpus cores: a password check is CPU-bound, so more than two per
// core only queue; and the checks together may take at most a 64th of memory
// (4 on 2 cores and 24 GiB, 1 on 1 GiB).
func HashSlotsFor(memBytes uint64, cpus int) int {
	byMem := int(memBytes / (64 * HashMemoryBytes))
	return max(1, min(2*max(1, cpus), byMem))
}

// DefaultHashSlots is HashSlotsFor this machine: its memory is the cgroup's
// limit when one is set (a container), else the machine's total; 4 slots
// when neither can be read.
func DefaultHashSlots() int {
	mem := cgroupMemoryLimit()
	if mem == 0 {
		mem = totalMemory()
	}
	if mem == 0 {
		return 4
	}
	return HashSlotsFor(mem, runtime.NumCPU())
}

func cgroupMemoryLimit() uint64 {
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && n < 1<<50 {
			return n
		}
	}
	return 0
}

func totalMemory() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) >= 2 && fs[0] == "MemTotal:" {
			kb, _ := strconv.ParseUint(fs[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}
