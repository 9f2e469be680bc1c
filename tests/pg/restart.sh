#!/bin/sh
# tests/pg/restart.sh DIR: restart the cluster of tests/pg/start.sh DIR
# (pg_ctl restart -m fast: every session is ended, as when a database
# server restarts under load); returns once it accepts connections again.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
pg_dir "${1:-}"
[ -f "$data/PG_VERSION" ] || die "no cluster in $dir (tests/pg/start.sh DIR makes one)"
ctl restart -m fast -w -t 60 restart
