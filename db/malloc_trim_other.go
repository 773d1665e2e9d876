//go:build !linux || !cgo

package db

// trimCHeap does nothing where malloc_trim is not known.
func trimCHeap() {}
