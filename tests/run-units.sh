#!/bin/sh
# Run every cmocka unit test of a build tree: run-units.sh BUILD [valgrind]
# SG_TEST_PG, when set, is the libpq URL of a PostgreSQL database the
# tests may wipe (tests/pg/with-db.sh makes one; make test does): the
# store's tests then run their cases on PostgreSQL too. It is passed on to
# each test as it is. Each binary has SG_UNIT_TIMEOUT seconds (900): a
# test that hangs fails instead of holding make test.
set -u
limit=${SG_UNIT_TIMEOUT:-900}
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
		timeout -k 10 "$limit" valgrind -q --error-exitcode=99 \
		    --leak-check=full --errors-for-leak-kinds=definite,indirect \
		    --trace-children=yes "$t"
	else
		timeout -k 10 "$limit" "$t"
	fi
	rc=$?
	[ "$rc" -eq 124 ] && echo "$t: still running after ${limit} s, stopped"
	[ "$rc" -eq 0 ] || failed=$((failed + 1))
done
echo "unit tests of $build${mode:+ under $mode}${SG_TEST_PG:+, the store also on PostgreSQL ($SG_TEST_PG)}:"
echo "unit: $((total - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
