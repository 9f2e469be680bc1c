#!/bin/sh
# What a code_interpreter request costs end to end, against a baseline in
# the same run: hyperfine, curl through lighttpd + sandgate-fcgi, with the
# scripted fake model (tests/fakes/upstream.py) and the local sandbox.
#   passthrough  one upstream turn, no tool            (model echo)
#   interception two upstream turns + a sandbox created, one cell run,
#                the sandbox deleted                  (model ci-primes)
#   streaming    the same, with stream: true, until the last byte
#   session      the interception request in a session (metadata.session_id):
#                its sandbox made in the warm-up, so no run pays a cold start
# Usage: sh bench/interception.sh [RUNS]   (default 50; loopback only)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
runs=${1:-50}
bench_setup
gw=$((22000 + $$ % 9000))
python3 "$root/tests/fakes/upstream.py" --port 0 --port-file "$dir/up.port" --quiet \
    --max-records 100 >/dev/null & upid=$!
for i in $(seq 50); do [ -s "$dir/up.port" ] && break; sleep 0.1; done
up=$(cat "$dir/up.port")
cat > "$dir/sandgate.conf" <<CONF
server: { workers = [2, 4]; user = "nobody"; };
store: { path = "$dir/store/sandgate.db"; };
auth: { allow_anonymous = true; };
models = ( { name = "*"; api_base = "http://127.0.0.1:$up/v1"; } );
sandbox_tools = ( { name = "local"; provider = "local"; } );
CONF
bench_gateway "$gw"
url="http://127.0.0.1:$gw/v1/responses"
ci='"tools":[{"type":"code_interpreter","container":{"type":"auto"}}]'
echo "$(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ), $runs runs each"
hyperfine -N --runs "$runs" --warmup 3 --style basic --export-json "$dir/hf.json" \
    -n passthrough "curl -sf $url -d '{\"model\":\"echo\",\"input\":\"hi\"}'" \
    -n interception "curl -sf $url -d '{\"model\":\"ci-primes\",\"input\":\"hi\",$ci}'" \
    -n streaming "curl -sfN $url -d '{\"model\":\"ci-primes\",\"input\":\"hi\",\"stream\":true,$ci}'" \
    -n session "curl -sf $url -d '{\"model\":\"ci-primes\",\"input\":\"hi\",\"metadata\":{\"session_id\":\"bench\"},$ci}'" \
    >/dev/null
python3 - "$dir/hf.json" <<'PY'
import json, sys
rs = json.load(open(sys.argv[1]))["results"]
base = rs[0]["median"]
print("| request | median | p95 (approx.) | × passthrough |")
print("| --- | --- | --- | --- |")
for r in rs:
    t = sorted(r["times"])
    p95 = t[min(len(t) - 1, int(round(0.95 * (len(t) - 1))))]
    print("| %s | %.1f ms | %.1f ms | %.1f |" % (r["command"], r["median"] * 1000, p95 * 1000, r["median"] / base))
PY
