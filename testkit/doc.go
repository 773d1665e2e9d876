// Package testkit builds real test environments: a SQLite file in the test's
// temporary directory, the embedded (or a given) workspace, the real router
// behind an httptest server, users and tokens, and headless Chromium through
// chromedp. Only tests import it; it mocks nothing.
package testkit
