# Sourced by start.sh, stop.sh and restart.sh (tests/pg): the cluster's
# directory, PostgreSQL's binaries and the user the cluster runs as.
#
#   pg_dir DIR   sets dir (absolute), data, log
#   pgbin        the newest /usr/lib/postgresql/N/bin (SG_PG_BIN to choose):
#                Debian keeps the server's programs out of PATH, and we go
#                around pg_wrapper so nothing depends on a packaged cluster
#   user         SG_USER (default sgtest) when we are root, else ourselves:
#                PostgreSQL refuses to run as root
#   as_user CMD  CMD as that user
#   port         SG_PG_PORT (default 5432): only names the socket, no TCP

die() {
	echo "tests/pg: $*" >&2
	exit 1
}

# Settings libpq and pg_ctl take from the environment would point
# elsewhere: every connection here names what it means.
unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGPASSWORD PGPASSFILE \
    PGSERVICE PGSERVICEFILE PGOPTIONS PGDATA PGCLUSTER PGSSLMODE 2>/dev/null || true

pgbin=${SG_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
[ -n "$pgbin" ] && [ -x "$pgbin/pg_ctl" ] && [ -x "$pgbin/initdb" ] ||
	die "no PostgreSQL server in /usr/lib/postgresql/*/bin (sh tests/install-deps.sh installs it)"
port=${SG_PG_PORT:-5432}

if [ "$(id -u)" -eq 0 ]; then
	user=${SG_USER:-sgtest}
	# As tests/integration/run.sh makes it.
	if ! id "$user" >/dev/null 2>&1; then
		useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
	fi
	as_user() { setpriv --reuid="$user" --regid="$user" --init-groups "$@"; }
else
	user=$(id -un)
	as_user() { "$@"; }
fi

pg_dir() {
	[ -n "${1:-}" ] || die "usage: $0 DIR"
	case $1 in
	/*) dir=$1 ;;
	*) dir=$(pwd)/$1 ;;
	esac
	dir=${dir%/}
	# DIR goes into a libpq URL as is (host=DIR): keep it to characters
	# that need no escaping there.
	case $dir in
	*[!A-Za-z0-9._/-]*) die "DIR may hold only A-Z a-z 0-9 . _ / -: $dir" ;;
	esac
	data=$dir/data
	log=$dir/server.log
	# The programs run as the user from a directory it can enter.
	cd /
}

# ctl WHAT ARG...: pg_ctl ARG... on the cluster, logging to its log, as
# the user; when it fails, what pg_ctl and the server said, and exit 1
# (WHAT names the action: "start", "restart").
ctl() {
	what=$1
	shift
	as_user "$pgbin/pg_ctl" -D "$data" -l "$log" "$@" >"$dir/pg_ctl.log" 2>&1 &&
		return 0
	echo "tests/pg: PostgreSQL did not $what in $dir; pg_ctl said:" >&2
	cat "$dir/pg_ctl.log" >&2
	echo "tests/pg: and its log, $log:" >&2
	cat "$log" >&2 2>/dev/null || true
	exit 1
}
