// Package logbuf holds Buffer, a log sink safe for concurrent writes that a
// test reads. It imports nothing of ours, so the tests inside jobs (which
// testkit imports) use it as well as those of other packages.
package logbuf
