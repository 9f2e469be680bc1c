#!/bin/sh
# Run every cmocka unit test of a build tree: run-units.sh BUILD [valgrind]
# SG_TEST_PG, when set, is the libpq URL of a PostgreSQL database the
# tests may wipe (tests/pg/with-db.sh makes one; make test does): the
# store's tests then run their cases on PostgreSQL too. It is passed on to
# each test as it is.
set -u
if [ -n "${SG_TEST_PG:-}" ]; then
	export SG_TEST_PG
fi
build=$1
mode=${2:-}
failed=0
total=0
for t in "$build"/tests/test_*; do
	[ -x "$t" ] || continue
	total=$((total + 1))
	if [ "$mode" = valgrind ]; then
		valgrind -q --error-exitcode=99 --leak-check=full \
		    --errors-for-leak-kinds=definite,indirect \
		    --trace-children=yes "$t" || failed=$((failed + 1))
	else
		"$t" || failed=$((failed + 1))
	fi
done
echo "unit tests of $build${mode:+ under $mode}${SG_TEST_PG:+, the store also on PostgreSQL ($SG_TEST_PG)}:"
echo "unit: $((total - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
