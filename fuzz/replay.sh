#!/bin/sh
# Every fuzz target of a build tree (BUILD/replay/fuzz_*), as a plain
# program over its seed corpus and the inputs that once crashed it:
# replay.sh BUILD. Run by `make test` on the ASan+UBSan build.
set -u
build=$1
here=$(cd "$(dirname "$0")" && pwd)
failed=0
for t in "$build"/replay/fuzz_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	LSAN_OPTIONS=suppressions=$here/lsan.supp \
	    "$t" "$here/corpus/$name" "$here/regress/$name" || failed=$((failed + 1))
done
echo "fuzz replays of $build: $failed failed"
[ "$failed" -eq 0 ]
