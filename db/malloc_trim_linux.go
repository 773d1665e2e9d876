//go:build linux && cgo

package db

// #include <malloc.h>
import "C"

// trimCHeap gives the free memory of the C heap, where SQLite allocates,
// back to the system. glibc keeps it otherwise: once a big value (a 20 MB
// event payload) has been allocated and freed, it raises its thresholds
// and holds up to twice that size free in each of its arenas.
func trimCHeap() { C.malloc_trim(0) }
