#!/bin/sh
# tests/pg/start.sh DIR: a throwaway PostgreSQL cluster for the tests, its
# data in DIR/data, its log in DIR/server.log and its Unix socket in DIR
# itself; no TCP (listen_addresses = ''). Made for speed, not for keeping:
# trust for local connections, fsync off. Run as root, the cluster runs as
# SG_USER (default sgtest, made if missing), which then owns DIR: the
# gateways' responders run as that user and reach the socket.
#
# Prints one line, the libpq URL of its maintenance database:
#   postgresql://USER@/postgres?host=DIR&port=5432
# Run again on a running cluster, it prints the URL again. Stop it with
# tests/pg/stop.sh DIR.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
pg_dir "${1:-}"

# The socket's path must fit in sun_path (108 bytes with its NUL).
sock="$dir/.s.PGSQL.$port"
[ "${#sock}" -le 107 ] || die "DIR is too long for a Unix socket: $sock"

mkdir -p "$dir"
if [ "$(id -u)" -eq 0 ]; then
	chown "$user:" "$dir"
fi
chmod 0755 "$dir"
as_user test -w "$dir" -a -x "$dir" ||
	die "$user cannot write $dir (is every directory above it open to $user?)"

if [ ! -f "$data/PG_VERSION" ]; then
	if ! as_user "$pgbin/initdb" -D "$data" -U "$user" --auth-local=trust \
	    --auth-host=reject -E UTF8 --locale=C --no-sync \
	    >"$dir/initdb.log" 2>&1; then
		cat "$dir/initdb.log" >&2
		die "initdb failed in $data"
	fi
	# Appended: the last setting of a name wins.
	as_user sh -c 'cat >> "$1"' sh "$data/postgresql.conf" <<CONF

# tests/pg/start.sh
listen_addresses = ''
port = $port
unix_socket_directories = '$dir'
unix_socket_permissions = 0777
max_connections = 200
shared_buffers = 32MB
fsync = off
synchronous_commit = off
full_page_writes = off
log_min_messages = warning
log_line_prefix = '%m [%p] %q%u@%d '
CONF
fi

if ! as_user "$pgbin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
	ctl start -w -t 60 start
fi

url="postgresql://$user@/postgres?host=$dir&port=$port"
# Up, and reachable by the user the gateways run as.
if ! out=$(as_user "$pgbin/psql" -X -q -At -d "$url" -c 'SELECT 1' 2>&1) ||
    [ "$out" != 1 ]; then
	echo "tests/pg: the cluster in $dir does not answer $user: $out" >&2
	cat "$log" >&2 2>/dev/null || true
	exit 1
fi
echo "$url"
