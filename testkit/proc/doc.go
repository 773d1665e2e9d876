// Package proc tells tests what /proc says of a process (whether any of
// its threads still runs); a leaf package, so that tests of the packages
// testkit itself imports (jobs) can use it too.
package proc
