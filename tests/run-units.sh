#!/bin/sh
# Run every cmocka unit test of a build tree: run-units.sh BUILD [valgrind]
set -u
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
echo "unit tests of $build${mode:+ under $mode}:"
echo "unit: $((total - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
