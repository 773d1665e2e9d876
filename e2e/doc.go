// Package e2e holds the tests that run the real tessera binary end to end:
// crash safety under kill -9, schedules across kills and downtime, the
// numbers every surface shows for one fixture, the words of the pages, and
// the asset grid in a browser. It has no code of its own: helpers shared
// with other packages live in testkit.
package e2e
