#!/bin/sh
# tests/pg/stop.sh DIR: stop the cluster tests/pg/start.sh DIR started
# (fast: sessions are ended). Nothing to stop (never started, stopped
# already, DIR gone) is fine. DIR is left for the caller to remove.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
pg_dir "${1:-}"
[ -f "$data/PG_VERSION" ] || exit 0
as_user "$pgbin/pg_ctl" -D "$data" status >/dev/null 2>&1 || exit 0
if ! as_user "$pgbin/pg_ctl" -D "$data" -m fast -w -t 30 stop >/dev/null; then
	echo "tests/pg: a fast stop did not end $data in 30 s; stopping it immediately" >&2
	as_user "$pgbin/pg_ctl" -D "$data" -m immediate -w -t 30 stop >/dev/null
fi
