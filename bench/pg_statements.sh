#!/bin/sh
# What a session request asks of PostgreSQL, statement by statement: the
# store part's session loop (bench/loop_client.mjs sticky, one code round a
# request on the e2b fake, c=16 for SECS seconds) against a cluster of its
# own with pg_stat_statements loaded (fsync and synchronous_commit on, as
# in make bench), then per request: each statement's calls, its time in
# the server (a lock's wait included) and its mean; then the CPU of each
# of the cluster's processes a request. Profile the PostgreSQL path with
# it before changing a statement.
#   sh bench/pg_statements.sh [SECS] [CONCURRENCY]   (default 8 s, 16)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
secs=${1:-8}
conc=${2:-16}
bench_setup
base=$((20000 + $$ % 9000))
up=$base e2b=$((base + 1)) gw=$((base + 2))
key=bench-key
bench_fakes "$up" "$e2b"
pgd="$dir/pg"
pg=$(sh "$root/tests/pg/start.sh" "$pgd")
. "$root/tests/pg/lib.sh"
psql() { as_user "$pgbin/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
psql -d "$pg" -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'" \
    -c "ALTER SYSTEM SET fsync = on" -c "ALTER SYSTEM SET synchronous_commit = on" \
    -c "ALTER SYSTEM SET full_page_writes = on" -c "CREATE DATABASE sgbench" >/dev/null
sh "$root/tests/pg/restart.sh" "$pgd" >/dev/null
url=$(printf %s "$pg" | sed 's|/postgres?|/sgbench?|')
psql -d "$url" -c "CREATE EXTENSION pg_stat_statements" >/dev/null
cat > "$dir/sandgate.conf" <<CONF
server: { workers = [4, 64]; user = "nobody"; };
store: { path = "$dir/store/sandgate.db"; url = "$url"; };
auth: { keys = ( { name = "bench"; key_sha256 = "$(printf %s "$key" | sha256sum | cut -d' ' -f1)"; } ); };
models = ( { name = "ci-1"; api_base = "http://127.0.0.1:$up/v1"; api_key = "x"; state = "gateway"; } );
sandbox_tools = ( { name = "e2b"; provider = "e2b"; api_key = "e2b_bench"; api_base = "http://127.0.0.1:$e2b";
    sandbox_url = "http://127.0.0.1:$e2b"; } );
interception: { sandbox_tool = "e2b"; };
sessions: { max_per_key = 256; };
CONF
bench_gateway "$gw"
loop() { # SECS
	FAKE_UPSTREAM="http://127.0.0.1:$up" node "$here/loop_client.mjs" \
	    "http://127.0.0.1:$gw/v1/responses" "$key" ci-1 "$conc" "$1" sticky
}
# A warm-up (sessions made, statements prepared), then counted alone.
loop 3 >/dev/null
psql -d "$url" -c "SELECT pg_stat_statements_reset()" >/dev/null
m=$(head -n 1 "$pgd/data/postmaster.pid")
pids="$m $(pgrep -P "$m" | tr '\n' ' ')"
cpu() { for p in $pids; do echo "$p $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)"; done; }
cpu > "$dir/cpu0"
loop "$secs" > "$dir/loop.json"
cpu > "$dir/cpu1"
n=$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
if (r.bad) console.error(`bench: ${r.bad} bad answers, first: ${r.firstBad}`);
console.log(r.reqs)' "$dir/loop.json")
echo "$n session requests at c=$conc in ${secs}s, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "| calls a request | µs a request | mean µs | statement |"
echo "| --- | --- | --- | --- |"
psql -d "$url" -A -t -F '|' -c "SELECT round(calls::numeric / $n, 2),
    round((total_exec_time * 1000 / $n)::numeric, 1), round((mean_exec_time * 1000)::numeric, 1),
    left(regexp_replace(query, '\s+', ' ', 'g'), 110)
    FROM pg_stat_statements WHERE calls::numeric / $n >= 0.05 ORDER BY total_exec_time DESC" |
    awk -F '|' '{ q = $4; for (i = 5; i <= NF; i++) q = q "|" $i
	printf "| %s | %s | %s | `%s` |\n", $1, $2, $3, q }'
psql -d "$url" -A -t -F ' ' -c "SELECT round(sum(calls)::numeric / $n, 1),
    round((sum(total_exec_time) * 1000 / $n)::numeric) FROM pg_stat_statements" |
    awk '{ printf "\n%s statements a request, %s µs of them in the server\n", $1, $2 }'
echo
echo "CPU a request by the cluster's processes (utime + stime):"
join "$dir/cpu0" "$dir/cpu1" | while read -r p a b; do
	printf '%s %s\n' "$((b - a))" "$(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | cut -c1-60)"
done | awk -v n="$n" -v hz="$(getconf CLK_TCK)" '
	{ t = $1; $1 = ""; sub(/^ /, ""); by[$0] += t; all += t }
	END { for (k in by) if (by[k] > 0) printf "  %7.0f µs  %s\n", by[k] * 1e6 / hz / n, k;
	      printf "  %7.0f µs  in all\n", all * 1e6 / hz / n }' | sort -rn
sh "$root/tests/pg/stop.sh" "$pgd" >/dev/null 2>&1 || true
