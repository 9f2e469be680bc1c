#!/bin/sh
# Local sandbox latency and memory, through lighttpd + sandgate-fcgi:
#   cold: create + the first print(1), N times (each sandbox deleted after)
#   warm: N runs in one live sandbox
# for four tools: "local" (a cgroup per sandbox, the default kernel: IPython
# when Debian's python3-ipython is there), "plain" (the same with
# kernel = "python": what IPython costs by difference), "process"
# (limits = "process": rlimits only, the cost of the cgroup by
# difference) and, as root, "net" (allow_internet_access: slirp4netns);
# then the PSS/USS of one idle kernel (bwrap + its init + the kernel's
# server + its worker).
# Usage: sh bench/local.sh [N]   (default 200; loopback only)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
n=${1:-200}
bench_setup
gw=$((21000 + $$ % 9000))
cat > "$dir/sandgate.conf" <<CONF
server: { workers = [2, 4]; user = "nobody"; };
store: { path = "$dir/store/sandgate.db"; };
auth: { allow_anonymous = true; };
sandbox_tools = ( { name = "local"; provider = "local"; },
  { name = "plain"; provider = "local"; kernel = "python"; },
  { name = "process"; provider = "local"; limits = "process"; },
  { name = "net"; provider = "local"; allow_internet_access = true; } );
CONF
bench_gateway "$gw"
echo "$(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), $(id -un)"
tools="local plain process"
[ "$(id -u)" -eq 0 ] && tools="$tools net"
for t in $tools; do
	python3 "$here/local_client.py" "$gw" "$n" "$t" | tee -a "$dir/out.json"
done
# One idle kernel to weigh.
curl -sf "http://127.0.0.1:$gw/v1/sandboxes" -d '{"tool":"local"}' >/dev/null
sleep 1
echo "idle kernel memory (kB):"
pids=$(pgrep -f "^/usr/bin/python3 -I /sandgate/kernel.py" || true)
for pid in $pids; do
	# The kernel's server (child of bubblewrap's init, whose parent is the
	# outer bwrap), then its worker(s).
	init=$(awk '{print $4}' "/proc/$pid/stat")
	outer=$(awk '{print $4}' "/proc/$init/stat")
	[ "$(cat "/proc/$init/comm" 2>/dev/null)" = bwrap ] || continue
	# Only kernels of this run's sandboxd (an orphan of another has init).
	[ "$(cat "/proc/$outer/comm" 2>/dev/null)" = bwrap ] || continue
	for p in $outer $init $pid $(pgrep -P "$pid" || true); do
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
