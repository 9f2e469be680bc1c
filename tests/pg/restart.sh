#!/bin/sh
# tests/pg/restart.sh DIR: restart the cluster of tests/pg/start.sh DIR
# (pg_ctl restart -m fast: every session is ended, as when a database
# server restarts under load); returns once it accepts connections again.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
pg_dir "${1:-}"
[ -f "$data/PG_VERSION" ] || die "no cluster in $dir (tests/pg/start.sh DIR makes one)"
if ! as_user "$pgbin/pg_ctl" -D "$data" -l "$log" -m fast -w -t 60 restart \
    >"$dir/pg_ctl.log" 2>&1; then
	echo "tests/pg: PostgreSQL did not restart in $dir; pg_ctl said:" >&2
	cat "$dir/pg_ctl.log" >&2
	echo "tests/pg: and its log, $log:" >&2
	cat "$log" >&2 2>/dev/null || true
	exit 1
fi
