#!/bin/sh
# The warm pool: a sandbox's first code run with warm = 2 against warm = 0,
# in the same run, on the local sandbox and on the e2b fake
# (tests/fakes/e2b.py, whose sandboxes start a real Python worker), through
# lighttpd + sandgate-fcgi. For each tool, N rounds (bench/pool_client.py):
# a run in a live sandbox (a warm run, the baseline), then create +
# print(1) (the first run) + delete, each after a PACE_MS pause.
# Usage: sh bench/pool.sh [N] [PACE_MS]   (default 30, 700; loopback only)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
n=${1:-30}
pace=${2:-700}
bench_setup
gw=$((23000 + $$ % 9000))
bench_e2b
cat > "$dir/sandgate.conf" <<CONF
server: { workers = [2, 4]; user = "nobody"; };
store: { path = "$dir/store/sandgate.db"; };
auth: { allow_anonymous = true; };
sessions: { max_per_key = 64; };
sandbox_tools = ( { name = "local-cold"; provider = "local"; },
  { name = "local-warm"; provider = "local"; warm = 2; },
  { name = "e2b-cold"; provider = "e2b"; api_key = "e2b_bench"; api_base = "$e2b"; sandbox_url = "$e2b"; },
  { name = "e2b-warm"; provider = "e2b"; api_key = "e2b_bench"; api_base = "$e2b"; sandbox_url = "$e2b"; warm = 2; } );
CONF
bench_gateway "$gw"
echo "$(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), $(id -un), $n rounds each, ${pace} ms apart"
# The pools fill before the first round.
sleep 3
for t in local-cold local-warm e2b-cold e2b-warm; do
	python3 "$here/pool_client.py" "$gw" "$n" "$t" "$pace" >> "$dir/out.json"
done
curl -s "http://127.0.0.1:$gw/metrics" | grep '^sandgate_pool_claims_total' > "$dir/claims" || true
python3 - "$dir/out.json" "$dir/claims" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
claims = {}
for l in open(sys.argv[2]):
    name, v = l.rsplit(" ", 1)
    tool = name.split('tool="')[1].split('"')[0]
    res = name.split('result="')[1].split('"')[0]
    claims.setdefault(tool, {})[res] = int(float(v))
print("| tool | warm | create p50 | first run p50 | create + first run p50 (p95) | warm run p50 | first run / warm run | create + first / warm run | pool hits / misses |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    c = claims.get(r["tool"], {})
    w = r["warm"]["p50"]
    print("| %s | %s | %.1f ms | %.1f ms | %.1f ms (%.1f) | %.1f ms | %.2f× | %.2f× | %s |" % (
        r["tool"], "2" if r["tool"].endswith("warm") else "0", r["create"]["p50"], r["first"]["p50"],
        r["total"]["p50"], r["total"]["p95"], w, r["first"]["p50"] / w, r["total"]["p50"] / w,
        "%d / %d" % (c.get("hit", 0), c.get("miss", 0)) if c else "-"))
PY
