// Package jobs runs work in the background: the backfill engine (create,
// preview, steer), its controller loop (plan chunks where slots are free,
// finish attempts), the dispatcher and the executors (command, http, demo).
// The demo history seeder lives in package demo.
//
// It speaks to the store in domain terms and never knows HTTP: no request,
// no status code, no wording for a page or a terminal.
package jobs
