#!/bin/sh
# tests/pg/with-db.sh NAME CMD [ARG...]: CMD with a throwaway PostgreSQL
# cluster (tests/pg/start.sh in a fresh temporary directory) holding an
# empty database NAME, whose URL is in SG_TEST_PG (the maintenance
# database's in SG_PG). The cluster is stopped and its directory removed
# when CMD ends, however it ends; CMD's status is ours. make test runs the
# unit tests this way: the store's run their cases on PostgreSQL too.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: $0 NAME CMD [ARG...]" >&2; exit 2; }
name=$1
shift
case $name in
*[!a-z0-9_]*|"") echo "$0: NAME may hold only a-z 0-9 _" >&2; exit 2 ;;
esac
dir=$(mktemp -d "${TMPDIR:-/tmp}/sgpg-XXXXXX")
cleanup() {
	sh "$here/stop.sh" "$dir" || true
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
SG_PG=$(sh "$here/start.sh" "$dir")
. "$here/lib.sh"
as_user "$pgbin/psql" -X -q -v ON_ERROR_STOP=1 -d "$SG_PG" -c "CREATE DATABASE $name"
SG_TEST_PG=$(printf '%s\n' "$SG_PG" | sed "s|/postgres?|/$name?|")
export SG_PG SG_TEST_PG
echo "tests/pg: a PostgreSQL database for the run: $SG_TEST_PG"
rc=0
"$@" || rc=$?
exit "$rc"
