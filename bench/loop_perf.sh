#!/bin/sh
# Where a code round's CPU goes, by wall-clock sampling (perf, the
# cpu-clock event: this machine kind has no hardware counters): the
# gateway (`workers = [1, 1]`) behind lighttpd, a sticky `ci-N` session
# at c=1 on bench/fakes.mjs (bench/loop_client.mjs) for SECS seconds while
# every process of the gateway is sampled. Prints the CPU a request, by
# the library the sample fell in (the kernel's own split by the system
# call it was serving: the first user frame under it), and the time the
# requests took. Callgrind (bench/instructions.sh) counts instructions;
# this sees the system calls and the kernel's work for them, which it
# does not.
#   sh bench/loop_perf.sh [SECS] [MODEL]   (default 8 s, ci-3)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
secs=${1:-8}
model=${2:-ci-3}
command -v perf >/dev/null || { echo "loop_perf: perf is not installed (Debian: linux-perf)" >&2; exit 1; }
bench_setup
base=$((20000 + $$ % 9000))
up=$base e2b=$((base + 1)) gw=$((base + 2))
key=bench-key
bench_fakes "$up" "$e2b"
cat > "$dir/sandgate.conf" <<CONF
server: { workers = [1, 1]; user = "nobody"; };
store: { path = "$dir/store/sandgate.db"; };
auth: { keys = ( { name = "bench"; key_sha256 = "$(printf %s "$key" | sha256sum | cut -d' ' -f1)"; } ); };
models = ( { name = "$model"; api_base = "http://127.0.0.1:$up/v1"; api_key = "x"; state = "gateway"; } );
sandbox_tools = ( { name = "e2b"; provider = "e2b"; api_key = "e2b_bench"; api_base = "http://127.0.0.1:$e2b";
    sandbox_url = "http://127.0.0.1:$e2b"; } );
interception: { sandbox_tool = "e2b"; };
sessions: { max_per_key = 256; };
CONF
mkdir -p "$dir/store"
chown nobody "$dir/store" 2>/dev/null || true
bench_gateway "$gw"
client() {
	FAKE_UPSTREAM="http://127.0.0.1:$up" node "$here/loop_client.mjs" \
	    "http://127.0.0.1:$gw/v1/responses" "$key" "$model" 1 "$1" sticky
}
client 2 > /dev/null	# the session's sandbox made, the responder warm
pids=$(pgrep -d, -f "sandgate-fcgi --config $dir")
perf record -q -e cpu-clock -F 4999 -g -p "$pids" -o "$dir/perf.data" \
    2>/dev/null & ppid=$!
sleep 0.5
client "$secs" > "$dir/client.json"
kill -INT $ppid
wait $ppid 2>/dev/null || true
perf script -i "$dir/perf.data" -F ip,sym,dso 2>/dev/null > "$dir/perf.txt"
python3 - "$dir/perf.txt" "$dir/client.json" "$model" "$secs" <<'PY'
import collections, json, sys
text, client, model, secs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
r = json.load(open(client))
n = r["reqs"]
hz = 4999
by_lib, by_call, by_sym = collections.Counter(), collections.Counter(), collections.Counter()
total = 0

def lib(frame):
    dso = frame.rsplit("(", 1)[-1].rstrip(")")
    name = dso.rsplit("/", 1)[-1]
    for short in ("kernel", "libc.so", "libsqlite3", "libcurl", "libjansson",
                  "libcrypto", "libfcgi", "sandgate-fcgi", "vdso"):
        if short in name:
            return short.replace(".so", "")
    return name

for sample in open(text).read().split("\n\n"):
    frames = [f.strip() for f in sample.strip().split("\n") if f.strip()]
    if not frames:
        continue
    total += 1
    leaf = lib(frames[0])
    by_lib[leaf] += 1
    if leaf != "kernel":
        by_sym[f"{frames[0].split(None, 1)[-1].rsplit(' (', 1)[0]} ({leaf})"] += 1
    if leaf == "kernel":
        user = next((f for f in frames if lib(f) != "kernel"), None)
        call = user.split(None, 1)[1].rsplit(" (", 1)[0] if user else "(none)"
        by_call[call] += 1

us = lambda k: k / hz * 1e6 / n
print(f"{n} sticky `{model}` requests at c=1 in {secs} s: p50 {r['total']['p50']} µs, "
      f"iteration p50 {r['iter']['p50']} µs (under perf)")
print()
print(f"CPU a request, the gateway's processes: {us(total):.0f} µs")
print()
print("| where | µs a request | share |")
print("| --- | --- | --- |")
rest = 0
for k, v in by_lib.most_common():
    if v < total / 200:
        rest += v
        continue
    print(f"| {k} | {us(v):.0f} | {100 * v / total:.1f}% |")
if rest:
    print(f"| the rest | {us(rest):.0f} | {100 * rest / total:.1f}% |")
print()
print("The kernel's share, by the system call it served (its caller's frame):")
print()
print("| call | µs a request | share of all |")
print("| --- | --- | --- |")
for k, v in by_call.most_common(10):
    print(f"| {k} | {us(v):.0f} | {100 * v / total:.1f}% |")
print()
print("Outside the kernel, the functions most samples fell in:")
print()
print("| function | µs a request | share of all |")
print("| --- | --- | --- |")
for k, v in by_sym.most_common(12):
    print(f"| {k} | {us(v):.0f} | {100 * v / total:.1f}% |")
PY
