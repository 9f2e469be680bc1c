#!/bin/sh
# Local sandbox latency and memory, through lighttpd + sandgate-fcgi:
#   cold: create + the first print(1), N times (each sandbox deleted after)
#   warm: N runs in one live sandbox
# then the PSS/USS of one idle kernel (bwrap + its init + python).
# Usage: sh bench/local.sh [N]   (default 200; loopback only)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
n=${1:-200}
make -s -C "$root" all
dir=$(mktemp -d /tmp/sgbench.XXXXXX)
chmod 755 "$dir"
gw=$((21000 + $$ % 9000))
cleanup() {
	[ -n "${lpid:-}" ] && kill "$lpid" 2>/dev/null || true
	sleep 1
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM
cat > "$dir/sandgate.conf" <<CONF
server: { workers = [2, 4]; user = "nobody"; };
store: { path = "$dir/store/sandgate.db"; };
auth: { allow_anonymous = true; };
sandbox_tools = ( { name = "local"; provider = "local"; } );
CONF
mkdir -p "$dir/www"
cat > "$dir/lighttpd.conf" <<CONF
server.port = $gw
server.bind = "127.0.0.1"
server.document-root = "$dir/www"
server.modules += ( "mod_fastcgi" )
\$HTTP["url"] =~ "^/(v1/|healthz$)" {
  fastcgi.server = ( "/" => (( "socket" => "$dir/fcgi.sock",
    "bin-path" => "$root/build/sandgate-fcgi --config $dir/sandgate.conf",
    "max-procs" => 1, "check-local" => "disable" )) )
}
CONF
/usr/sbin/lighttpd -D -f "$dir/lighttpd.conf" 2>"$dir/log" & lpid=$!
for i in $(seq 100); do
	curl -sf "http://127.0.0.1:$gw/healthz" >/dev/null 2>&1 && break
	sleep 0.1
done
echo "$(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), $(id -un)"
python3 "$here/local_client.py" "$gw" "$n" | tee "$dir/out.json"
echo "idle kernel memory (kB):"
pids=$(pgrep -f "^/usr/bin/python3 -I /sandgate/kernel.py" || true)
for pid in $pids; do
	# The python kernel, its bwrap init (parent) and the outer bwrap.
	init=$(awk '{print $4}' "/proc/$pid/stat")
	outer=$(awk '{print $4}' "/proc/$init/stat")
	for p in $outer $init $pid; do
		awk -v p="$p" -v c="$(cat /proc/$p/comm)" '
		/^Pss:/ {pss=$2} /^Private_Clean:/ {uss+=$2} /^Private_Dirty:/ {uss+=$2}
		END {printf "  %-8s %7d  PSS %6d  USS %6d\n", c, p, pss, uss}' "/proc/$p/smaps_rollup"
	done
done
echo "baselines in the same run (hyperfine, 50 runs): a bare interpreter, and one under bubblewrap"
hyperfine -N --runs 50 --warmup 3 --style basic --export-json "$dir/hf.json" \
    '/usr/bin/python3 -I -c pass' \
    '/usr/bin/bwrap --unshare-user --unshare-pid --unshare-net --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin --proc /proc --dev /dev /usr/bin/python3 -I -c pass' \
    >/dev/null 2>&1 || true
python3 -c '
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print("  %-10s median %.1f ms" % ("bwrap" if "bwrap" in r["command"] else "python3", r["median"] * 1000))
' "$dir/hf.json" 2>/dev/null || echo "  (hyperfine not available)"
