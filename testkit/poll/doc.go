// Package poll holds the one way tests wait: Eventually. It imports nothing
// of ours, so the tests inside jobs (which testkit imports) use it too;
// other tests call testkit.Eventually, which is this function.
package poll
