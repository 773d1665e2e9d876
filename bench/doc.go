// Package bench measures Tessera on generated data: each benchmark builds a
// temporary database, drives the real store, engine and HTTP handlers, and
// returns a result struct (one JSON line of `tessera bench …`). The cobra
// commands and their flag checks stay in cli.
//
// Figures are measured here and reported, never asserted by a test.
package bench
