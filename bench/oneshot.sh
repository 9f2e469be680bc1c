#!/bin/sh
# One-shot code runs (POST /v1/code: a sandbox made or claimed from the
# warm pool, one run, the sandbox deleted) against runs in a live sandbox,
# in the same run, on the e2b fake (tests/fakes/e2b.py, whose sandboxes
# start a real Python worker) with and without a warm pool, through
# lighttpd + sandgate-fcgi: bench/oneshot_client.py, N rounds each, PACE_MS
# apart. GW_BIN: the sandgate-fcgi to measure (default: this tree's build).
# Usage: sh bench/oneshot.sh [N] [PACE_MS]   (default 40, 300; loopback only)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
n=${1:-40}
pace=${2:-300}
gw_bin=${GW_BIN:-}
bench_setup
gw=$((24000 + $$ % 9000))
bench_e2b
cat > "$dir/sandgate.conf" <<CONF
server: { workers = [2, 4]; user = "nobody"; };
store: { path = "$dir/store/sandgate.db"; };
auth: { allow_anonymous = true; };
sandbox_tools = (
  { name = "e2b-cold"; provider = "e2b"; api_key = "e2b_bench"; api_base = "$e2b"; sandbox_url = "$e2b"; },
  { name = "e2b-warm"; provider = "e2b"; api_key = "e2b_bench"; api_base = "$e2b"; sandbox_url = "$e2b"; warm = 2; } );
CONF
bench_gateway "$gw"
echo "$(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), ${gw_bin:-$root/build/sandgate-fcgi}, $n rounds each, ${pace} ms apart"
sleep 3	# the pool fills before the first round
for t in e2b-cold e2b-warm; do
	timeout 300 python3 "$here/oneshot_client.py" "$gw" "$n" "$t" "$pace" >> "$dir/out.json"
done
python3 - "$dir/out.json" <<'PY'
import json, sys
print("| tool | one-shot p50 (p95) | live-sandbox run p50 (p95) | one-shot / live |")
print("| --- | --- | --- | --- |")
for l in open(sys.argv[1]):
    r = json.loads(l)
    print("| %s | %.1f ms (%.1f) | %.1f ms (%.1f) | %.2f× |" % (r["tool"], r["oneshot"]["p50"], r["oneshot"]["p95"],
          r["warm"]["p50"], r["warm"]["p95"], r["ratio"]))
PY
