// Package cli is the tessera command line, built with cobra: serve, the
// client commands that speak to a server's API (backfill, gaps, report,
// asset, ...), the administrative commands that work on the database
// (user, token, migrate), workspace checks and the commands of the
// benchmarks (their flags; the benchmarks themselves are in package bench).
//
// Client commands word their messages from the API's error values (code,
// field, parameters); administrative commands call the store. No SQL here.
package cli
