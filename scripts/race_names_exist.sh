#!/bin/sh
# race_names_exist.sh DIR NAME...: fails unless each NAME (a test name, or
# a pattern such as TestStream.*) names at least one top-level test of the
# package in DIR. The Makefile's race pass selects its tests by name
# (RACE_HANDLERS, RACE_DB, RACE_JOBS_OUT): a test renamed or deleted would
# otherwise drop out of it, or back into it, without a word.
set -eu
dir=$1
shift
missing=
for name in "$@"; do
	if ! grep -Eq "^func ($name)\(t \*testing\.T\)" "$dir"/*_test.go; then
		missing="$missing $name"
	fi
done
if [ -n "$missing" ]; then
	echo "Makefile race lists name tests that $dir has not:$missing" >&2
	echo "(renamed or deleted? update RACE_HANDLERS, RACE_DB or RACE_JOBS_OUT in the Makefile)" >&2
	exit 1
fi
