// Package demo seeds a fresh database with believable history for the demo
// workspace (tessera serve --demo, and tests that want a lived-in store):
// materializations with a few failures and gaps, previous code versions and
// watermarks, the same history for the same seed.
//
// It writes through the store in domain terms (db) and reads the workspace
// (catalog); it knows neither the engine nor HTTP.
package demo
