#!/bin/sh
# Passthrough overhead, measured against a baseline in the same run:
#   direct    wrk -> fast upstream (bench/fast-upstream.mjs)
#   gateway   wrk -> lighttpd -> sandgate-fcgi -> the same upstream
#   healthz   wrk -> lighttpd -> sandgate-fcgi (no upstream: the floor)
# then the memory (PSS/USS) of the master and each responder.
# Usage: sh bench/passthrough.sh [DURATION_S] [CONNECTIONS]   (loopback only)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
secs=${1:-10}
conns=${2:-16}
bench_setup
up=$((20000 + $$ % 10000))
gw=$((up + 1))
user=nobody
node "$here/fast-upstream.mjs" "$up" & upid=$!
key_hash=$(printf 'bench-key' | sha256sum | cut -d' ' -f1)
cat > "$dir/sandgate.conf" <<CONF
server: { workers = [4, 8]; user = "$user"; };
store: { path = "$dir/store/sandgate.db"; };
auth: { keys = ( { name = "bench"; key_sha256 = "$key_hash"; } ); };
models = ( { name = "bench"; api_base = "http://127.0.0.1:$up/v1"; api_key = "x"; model = "echo"; } );
CONF
for i in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$up/" 2>/dev/null && break; sleep 0.1; done
bench_gateway "$gw"
printf '{"model":"bench","messages":[{"role":"user","content":"hi"}]}' > "$dir/body.json"
printf '{"model":"bench","stream":true,"messages":[{"role":"user","content":"hi"}]}' > "$dir/stream.json"
export BODY_FILE

summary() { # label, wrk output file
	rps=$(awk '/^Requests\/sec/ {print $2}' "$2")
	p50=$(awk '$1=="50%" {print $2}' "$2")
	p99=$(awk '$1=="99%" {print $2}' "$2")
	non2xx=$(awk '/Non-2xx/ {print $NF}' "$2")
	printf '| %-34s | %10s | %9s | %9s | %s |\n' "$1" "$rps" "$p50" "$p99" "${non2xx:-0}"
}
bench() { # label, url, body file or -
	if [ "$3" = - ]; then
		wrk -t2 -c"$conns" -d"${secs}s" --latency "$2" > "$dir/wrk.out"
	else
		BODY_FILE=$3 wrk -t2 -c"$conns" -d"${secs}s" --latency -s "$here/post.lua" "$2" > "$dir/wrk.out"
	fi
	summary "$1" "$dir/wrk.out"
}

echo "wrk -t2 -c$conns -d${secs}s, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "| scenario                           |  req/s     |   p50     |   p99     | non-2xx |"
echo "|------------------------------------|------------|-----------|-----------|---------|"
bench "direct: upstream chat JSON" "http://127.0.0.1:$up/v1/chat/completions" "$dir/body.json"
bench "gateway: chat JSON passthrough" "http://127.0.0.1:$gw/v1/chat/completions" "$dir/body.json"
bench "direct: upstream chat stream" "http://127.0.0.1:$up/v1/chat/completions" "$dir/stream.json"
bench "gateway: chat stream passthrough" "http://127.0.0.1:$gw/v1/chat/completions" "$dir/stream.json"
bench "gateway: GET /healthz (floor)" "http://127.0.0.1:$gw/healthz" -

echo
echo "memory after the load (kB; PSS shares pages fairly, USS is private):"
master=$(pgrep -f "^$root/build/sandgate-fcgi --config $dir" -o)
for pid in $master $(pgrep -P "$master"); do
	awk -v pid="$pid" -v who="$([ "$pid" = "$master" ] && echo master || echo responder)" '
	/^Pss:/ {pss=$2} /^Private_Clean:/ {uss+=$2} /^Private_Dirty:/ {uss+=$2}
	END {printf "  %-9s %6d  PSS %6d  USS %6d\n", who, pid, pss, uss}' "/proc/$pid/smaps_rollup"
done
