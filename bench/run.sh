#!/bin/sh
# `make bench`: every figure against a baseline measured in the same run,
# loopback only, bounded (about BENCH_SECS × 40 s plus the local sandbox's
# part). Writes the Markdown to stdout and into bench/RESULTS.md between
# the "make bench" markers (the rest of that file is kept).
#   BENCH_SECS    seconds per wrk row (default 5)
#   BENCH_PARTS   which parts (default "floor cpu loop memory local pool
#                 oneshot store queue ledger background")
#   BENCH_BASE    the commit the ledger part compares with (default: the
#                 last one before the ledger and limits)
#   BENCH_NO_WRITE=1  print only, leave RESULTS.md alone
#   BENCH_PG_SYNC PostgreSQL's synchronous_commit in the store part (on)
#   BENCH_STREAMS streams held open at once in the memory part (1000)
# BENCH_PARTS=hold keeps the stack up for BENCH_HOLD seconds (default 600),
# its ports and directory on stderr: for profiling by hand.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
secs=${BENCH_SECS:-5}
parts=${BENCH_PARTS:-floor cpu loop memory local pool oneshot store queue ledger background}
bench_setup
make -s -C "$root" build/bench/floor build/bench/proxyfloor build/bench/curl_floor \
    build/bench/loop_floor build/bench/stalls
out="$dir/results.md"
base=$((20000 + $$ % 9000))
up=$base e2b=$((base + 1)) gw=$((base + 2))
key=bench-key
key2=bench-key-2
bench_fakes "$up" "$e2b" 15
printf '{"status":"ok"}\n' > "$dir/www/static.json"

# The gateway: WORKERS, keys with MAXC concurrent requests (0: no cap of
# their own, the default), the fakes, the store at $store_url when set.
store_url=
gateway_conf() {
	maxc=""; [ "$2" -gt 0 ] && maxc="max_concurrent = $2;"
	cat > "$dir/sandgate.conf" <<CONF
server: { workers = $1; user = "nobody"; };
store: { path = "$dir/store/sandgate.db"; ${store_url:+url = \"$store_url\";} };
auth: { keys = ( { name = "bench"; key_sha256 = "$(printf %s "$key" | sha256sum | cut -d' ' -f1)"; $maxc },
  { name = "bench2"; key_sha256 = "$(printf %s "$key2" | sha256sum | cut -d' ' -f1)"; $maxc } ); $maxc };
models = (
  { name = "bench"; api_base = "http://127.0.0.1:$up/v1"; api_key = "x"; model = "echo"; },
  { name = "slow"; api_base = "http://127.0.0.1:$up/v1"; api_key = "x"; model = "slow"; },
  { name = "delay"; api_base = "http://127.0.0.1:$up/v1"; api_key = "x"; model = "delay"; },
  { name = "ci-1"; api_base = "http://127.0.0.1:$up/v1"; api_key = "x"; state = "gateway"; },
  { name = "ci-3"; api_base = "http://127.0.0.1:$up/v1"; api_key = "x"; state = "gateway"; }
);
sandbox_tools = (
  { name = "e2b"; provider = "e2b"; api_key = "e2b_bench"; api_base = "http://127.0.0.1:$e2b";
    sandbox_url = "http://127.0.0.1:$e2b"; }
);
interception: { sandbox_tool = "e2b"; container_reuse = "none"; };
sessions: { max_per_key = 256; };
CONF
}
gateway_conf "[4, 64]" 0
bench_gateway "$gw" "$(cat <<CONF
\$HTTP["url"] =~ "^/floor" {
  fastcgi.server = ( "/floor" => (( "socket" => "$dir/floor.sock",
    "bin-path" => "$root/build/bench/floor", "max-procs" => 4, "check-local" => "disable" )) )
}
\$HTTP["url"] =~ "^/pfloor" {
  fastcgi.server = ( "/pfloor" => (( "socket" => "$dir/pfloor.sock",
    "bin-path" => "$root/build/bench/proxyfloor", "max-procs" => 4, "check-local" => "disable",
    "bin-environment" => ( "PROXY_FLOOR_URL" => "http://127.0.0.1:$up/v1/chat/completions" ) )) )
}
CONF
)"
curl -sf "http://127.0.0.1:$gw/floor" >/dev/null
curl -sf "http://127.0.0.1:$gw/pfloor" -d '{}' >/dev/null

printf '{"model":"bench","messages":[{"role":"user","content":"hi"}]}' > "$dir/json.body"
printf '{"model":"bench","stream":true,"messages":[{"role":"user","content":"hi"}]}' > "$dir/stream.body"

# wrk at C connections for secs: "req/s p50_us p99_us errors".
wrk_row() { # C URL [BODY_FILE]
	t=2; [ "$1" -lt 2 ] && t=1
	if [ -n "${3:-}" ]; then
		BODY_FILE=$3 wrk -t$t -c"$1" -d"${secs}s" --latency -s "$here/post.lua" "$2" > "$dir/wrk.out"
	else
		wrk -t$t -c"$1" -d"${secs}s" --latency "$2" > "$dir/wrk.out"
	fi
	awk 'function us(v) { if (v ~ /us$/) return v + 0; if (v ~ /ms$/) return v * 1000; if (v ~ /s$/) return v * 1e6; return v }
	/^Requests\/sec/ { rps = $2 } $1 == "50%" { p50 = us($2) } $1 == "99%" { p99 = us($2) }
	/Non-2xx|Socket errors/ { err = err $0 }
	END { printf "%d %d %d %s\n", rps, p50, p99, (err == "" ? "0" : "1") }' "$dir/wrk.out"
}

# ---------------------------------------------------------------- 1, 2: the floor
part_floor() {
	g="http://127.0.0.1:$gw"
	echo "### At the FastCGI floor"
	echo
	echo "wrk -t2 (-t1 at c=1) -d${secs}s --latency, through one lighttpd; POSTs with \`bench/post.lua\`."
	echo
	echo "| what | c=1 p50 | c=1 p99 | c=16 req/s | c=16 p50 | c=16 p99 | c=64 req/s | c=64 p50 | c=64 p99 |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	for row in "static file|$g/static.json|" "bare libfcgi responder (floor)|$g/floor|" \
	    "sandgate GET /healthz|$g/healthz|" \
	    "upstream direct, chat JSON|http://127.0.0.1:$up/v1/chat/completions|$dir/json.body" \
	    "libfcgi + libcurl proxy (passthrough floor), chat JSON|$g/pfloor|$dir/json.body" \
	    "sandgate passthrough, chat JSON|$g/v1/chat/completions|$dir/json.body" \
	    "upstream direct, chat stream|http://127.0.0.1:$up/v1/chat/completions|$dir/stream.body" \
	    "libfcgi + libcurl proxy (passthrough floor), chat stream|$g/pfloor|$dir/stream.body" \
	    "sandgate passthrough, chat stream|$g/v1/chat/completions|$dir/stream.body"; do
		name=${row%%|*}; rest=${row#*|}; url=${rest%%|*}; body=${rest#*|}
		line="| $name"
		for c in 1 16 64; do
			set -- $(wrk_row $c "$url" "$body")
			echo "$name $c $*" >> "$dir/floor.raw"
			[ "$4" = 0 ] || { echo "bench: errors in $name at c=$c" >&2; cat "$dir/wrk.out" >&2; }
			if [ $c = 1 ]; then line="$line | $2 µs | $3 µs"
			else line="$line | $1 | $2 µs | $3 µs"; fi
		done
		echo "$line |"
	done
	echo
	awk -f "$here/targets.awk" "$dir/floor.raw"
	echo
}

# CPU time per request by process, over one wrk run at c=16: where the
# time went. Ticks from /proc/PID/stat (utime + stime, and for a master
# what its exited children used) before and after; a warm-up run first
# grows the pool, so the processes measured are the ones that serve.
snap() { # pids... -> "pid ticks" lines
	for p in "$@"; do
		awk -v p="$p" '{ print p, $14 + $15 + $16 + $17 }' "/proc/$p/stat" 2>/dev/null || true
	done
}
delta() { # before-file pids... -> ticks used since (new pids: all of theirs)
	snap "$@" | awk -v f="$1" 'BEGIN { while ((getline l < f) > 0) { split(l, a, " "); b[a[1]] = a[2] } }
	{ t += $2 - ($1 in b ? b[$1] : 0) } END { print t + 0 }' 
}
gateway_pids() {
	m=$(pgrep -f "^${gw_bin:-$root/build/sandgate-fcgi} --config $dir" -o)
	echo "$m $(pgrep -P "$m" | tr '\n' ' ')"
}
floor_pids() { pgrep -f "^$root/build/bench/floor" | tr '\n' ' '; }
pfloor_pids() { pgrep -f "^$root/build/bench/proxyfloor" | tr '\n' ' '; }
no_pids() { :; }
since() { # snap-file pids-function: ticks used by those pids and the snapped ones
	delta "$1" $( ($2; cut -d' ' -f1 "$1") | tr ' ' '\n' | sort -u)
}
wrk16() { # URL BODY|"" SECS: wrk at c=16, its CPU time into $dir/time.out
	if [ -n "$2" ]; then
		BODY_FILE=$2 /usr/bin/time -f "%U %S" -o "$dir/time.out" wrk -t2 -c16 -d"$3s" \
		    -s "$here/post.lua" "$1"
	else
		/usr/bin/time -f "%U %S" -o "$dir/time.out" wrk -t2 -c16 -d"$3s" "$1"
	fi
}
cpu_row() { # label URL BODY|"" backend-pids-function
	light=$(pgrep -f "lighttpd -D -f $dir/lighttpd.conf" -o)
	wrk16 "$2" "$3" 1 > /dev/null
	snap "$light" > "$dir/l.snap"; snap $($4) > "$dir/b.snap"; snap "$upid" > "$dir/u.snap"
	wrk16 "$2" "$3" "$secs" > "$dir/wrk.out"
	n=$(awk '/requests in/ { print $1 }' "$dir/wrk.out")
	l=$(delta "$dir/l.snap" "$light"); b=$(since "$dir/b.snap" "$4")
	u=$(delta "$dir/u.snap" "$upid")
	# The row, and the backend's figure kept for the table of own shares.
	awk -v label="$1" -v n="$n" -v hz="$(getconf CLK_TCK)" -v l="$l" -v b="$b" -v u="$u" \
	    -v w="$(cat "$dir/time.out")" -v raw="$dir/cpu.raw" 'BEGIN { split(w, t, " "); us = 1e6 / hz / n;
		printf "%s|%.1f\n", label, b * us >> raw
		printf "| %s | %d | %.1f µs | %.1f µs | %.1f µs | %.1f µs | %.1f µs |\n", label, n,
		    (t[1] + t[2]) * 1e6 / n, l * us, b * us, u * us, (t[1] + t[2]) * 1e6 / n + (l + b + u) * us }'
}
part_cpu() {
	g="http://127.0.0.1:$gw"
	echo "### Where the CPU goes"
	echo
	echo "CPU time per request by process (utime + stime from \`/proc\`, wrk's from"
	echo "\`time\`), one wrk -t2 -c16 -d${secs}s run each; the two cores are shared by all."
	echo
	echo "| what | requests | wrk | lighttpd | backend (responders + master) | fake upstream | all |"
	echo "| --- | --- | --- | --- | --- | --- | --- |"
	cpu_row "bare libfcgi responder" "$g/floor" "" floor_pids
	cpu_row "sandgate GET /healthz" "$g/healthz" "" gateway_pids
	cpu_row "upstream direct, chat JSON" "http://127.0.0.1:$up/v1/chat/completions" "$dir/json.body" no_pids
	cpu_row "libfcgi + libcurl proxy (passthrough floor), chat JSON" "$g/pfloor" "$dir/json.body" pfloor_pids
	cpu_row "sandgate passthrough, chat JSON" "$g/v1/chat/completions" "$dir/json.body" gateway_pids
	cpu_row "libfcgi + libcurl proxy (passthrough floor), chat stream" "$g/pfloor" "$dir/stream.body" pfloor_pids
	cpu_row "sandgate passthrough, chat stream" "$g/v1/chat/completions" "$dir/stream.body" gateway_pids
	echo
	echo "Backend CPU a request over its floor's (sandgate's own share: its code, and the"
	echo "system calls it makes beyond what a bare libfcgi responder and libcurl make):"
	echo
	awk -F'|' '{ us[$1] = $2 }
	function own(what, a, b, want) {
		printf "| %s | %.1f µs (%.1f − %.1f) | ≤ %d µs | %s |\n", what, us[a] - us[b], us[a], us[b], want,
		    us[a] - us[b] <= want ? "met" : "**missed**" }
	END { print "| target | measured | wanted | |"; print "| --- | --- | --- | --- |"
		h = us["sandgate GET /healthz"]; f = us["bare libfcgi responder"]
		printf "| /healthz ÷ the bare responder | %.2f× (%.1f / %.1f µs) | ≤ 1.33× | %s |\n", h / f, h, f,
		    h / f <= 1.33 ? "met" : "**missed**"
		own("passthrough JSON − the passthrough floor", "sandgate passthrough, chat JSON",
		    "libfcgi + libcurl proxy (passthrough floor), chat JSON", 40)
		own("passthrough stream − the passthrough floor", "sandgate passthrough, chat stream",
		    "libfcgi + libcurl proxy (passthrough floor), chat stream", 40) }' "$dir/cpu.raw"
	echo
}

# ---------------------------------------------------------------- 3: the loop
. "$here/part_loop.sh"

# ---------------------------------------------------------------- 4: memory
responders() { # master pid -> responder pids (not the reaper, runners)
	for p in $(pgrep -P "$1"); do
		case "$(cat /proc/$p/comm)" in sg-*) ;; *) echo "$p" ;; esac
	done
}
mem_line() { # label pids...
	label=$1; shift
	for p in "$@"; do cat "/proc/$p/smaps_rollup"; done 2>/dev/null | awk -v label="$label" -v n=$# '
	/^Pss:/ { pss += $2; if ($2 > maxp) maxp = $2 }
	/^Private_(Clean|Dirty):/ { uss += $2 }
	END { printf "| %s | %d | %.0f kB | %.0f kB | %.0f kB | %.1f MiB |\n", label, n, pss / n, maxp, uss / n, pss / 1024 }'
}
part_memory() {
	nstreams=${BENCH_STREAMS:-1000}
	master=$(pgrep -f "^$root/build/sandgate-fcgi --config $dir" -o)
	echo "### Memory"
	echo
	echo "From \`/proc/PID/smaps_rollup\` (PSS shares pages fairly, USS is a process's own)."
	echo
	echo "| processes | how many | PSS each (mean) | PSS max | USS each (mean) | PSS all |"
	echo "| --- | --- | --- | --- | --- | --- |"
	mem_line "master" "$master"
	mem_line "responders after the load above" $(responders "$master")
	# Fresh responders: restart, let it settle, before any load.
	kill "$lpid"; wait "$lpid" 2>/dev/null || true
	gateway_conf "[4, $nstreams]" 0
	bench_gateway "$gw"
	sleep 1
	master=$(pgrep -f "^$root/build/sandgate-fcgi --config $dir" -o)
	mem_line "responders idle (fresh)" $(responders "$master")
	node "$here/streams_client.mjs" "http://127.0.0.1:$gw/v1/chat/completions" "$key" "$nstreams" > "$dir/streams.json" &
	scl=$!
	for i in $(seq 600); do [ -s "$dir/streams.json" ] && break; sleep 0.1; done
	mem_line "$nstreams streams held open" $(responders "$master")
	echo
	wait $scl
	node -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").pop());
const n = process.argv[2];
console.log(`${n} concurrent streaming clients (\`bench/streams_client.mjs\`, the fake upstream sending one delta`);
console.log(`every 200 ms for 15 s; \`workers = [4, ${n}]\`): ${r.open} open with a first delta after ${r.firstAllMs} ms;`);
console.log(`${r.done} finished whole, ${r.bad} failed.`);' "$dir/streams.json" "$nstreams"
	echo
	kill "$lpid"; wait "$lpid" 2>/dev/null || true
	gateway_conf "[4, 64]" 0
	bench_gateway "$gw"
}

# ---------------------------------------------------------------- the store
# The same gateway on its SQLite file, then on PostgreSQL (tests/pg: a
# throwaway cluster on a Unix socket, fsync on as a server keeps it):
# passthrough with a key from the store (one lookup a request), and the
# session loop (a claim, a run lock, a stored response a request).
store_rows() { # label
	k=$("$root/build/sandgate" --config "$dir/sandgate.conf" keys create "store$$-$1")
	printf '{"model":"bench","messages":[{"role":"user","content":"hi"}]}' > "$dir/store.body"
	for c in 1 16 64; do
		set -- "$1" $(KEY=$k wrk_row $c "http://127.0.0.1:$gw/v1/chat/completions" "$dir/store.body")
		[ "$5" = 0 ] || { echo "bench: errors in the $1 passthrough at c=$c" >&2; cat "$dir/wrk.out" >&2; }
		echo "| passthrough, chat JSON, a store key | $1 | $c | $2 | $3 µs | $4 µs |"
	done
	for c in 1 16; do
		snap $(gateway_pids) > "$dir/g.snap"; snap $(pg_pids) > "$dir/p.snap"; snap "$upid" > "$dir/u.snap"
		FAKE_UPSTREAM="http://127.0.0.1:$up" /usr/bin/time -f "%U %S" -o "$dir/time.out" \
		    node "$here/loop_client.mjs" \
		    "http://127.0.0.1:$gw/v1/responses" "$key" ci-1 "$c" "$secs" sticky > "$dir/sloop.json"
		[ "$c" = 16 ] && session_cpu "$1"
		node -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
if (r.bad) console.error(`bench: ${r.bad} bad answers, first: ${r.firstBad}`);
console.log(`| session: one code round a request | ${process.argv[2]} | ${r.conc} | ${Math.round(r.rps)} | ${r.total.p50} µs | ${r.total.p99} µs |`);' \
		    "$dir/sloop.json" "$1"
	done
}
# The postmaster of the bench's cluster and its children (none on SQLite).
pg_pids() {
	[ -f "$dir/pg/data/postmaster.pid" ] || return 0
	m=$(head -n 1 "$dir/pg/data/postmaster.pid")
	echo "$m $(pgrep -P "$m" | tr '\n' ' ')"
}
# CPU a session request by process over the run just made ($dir/sloop.json):
# a line of $dir/store_cpu.raw, printed after the store's table.
session_cpu() { # store
	n=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).reqs)' "$dir/sloop.json")
	g=$(since "$dir/g.snap" gateway_pids)
	p=$(since "$dir/p.snap" pg_pids)
	u=$(delta "$dir/u.snap" "$upid")
	awk -v s="$1" -v n="$n" -v hz="$(getconf CLK_TCK)" -v g="$g" -v p="$p" -v u="$u" \
	    -v w="$(cat "$dir/time.out")" 'BEGIN { split(w, t, " "); us = 1e6 / hz / n;
		printf "| %s | %d | %.0f µs | %.0f µs | %.0f µs | %.0f µs | %.0f µs |\n", s, n, g * us, p * us, u * us,
		    (t[1] + t[2]) * 1e6 / n, (g + p + u) * us + (t[1] + t[2]) * 1e6 / n }' >> "$dir/store_cpu.raw"
}
part_store() {
	pgv=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 |
	    sed 's|/usr/lib/postgresql/||; s|/bin||')
	echo "### The store: SQLite and PostgreSQL"
	echo
	echo "The gateway above on its SQLite file, then on PostgreSQL $pgv (\`tests/pg/start.sh\`:"
	echo "a cluster of its own on a Unix socket, with \`fsync\`, \`synchronous_commit\` and"
	echo "\`full_page_writes\` on, as a server keeps them). Passthrough rows: wrk -d${secs}s with a"
	echo "key made by \`sandgate keys create\` (looked up in the store on every request)."
	echo "Session rows:"
	echo "\`bench/loop_client.mjs\` sticky \`ci-1\` for ${secs}s (each request claims its"
	echo "session, takes the sandbox's run lock, runs one round on the e2b fake and"
	echo "stores its response)."
	echo
	echo "| what | store | c | req/s | p50 | p99 |"
	echo "| --- | --- | --- | --- | --- | --- |"
	store_rows sqlite
	pgd="$dir/pg"
	pg=$(sh "$root/tests/pg/start.sh" "$pgd")
	as=""; [ "$(id -u)" -eq 0 ] && as="runuser -u ${SG_USER:-sgtest} --"
	$as "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/psql" -X -q -d "$pg" -c "ALTER SYSTEM SET fsync = on" -c "ALTER SYSTEM SET synchronous_commit = ${BENCH_PG_SYNC:-on}" \
	    -c "ALTER SYSTEM SET full_page_writes = on" -c "SELECT pg_reload_conf()" -c "CREATE DATABASE sgbench" >/dev/null
	kill "$lpid"; wait "$lpid" 2>/dev/null || true
	store_url=$(printf %s "$pg" | sed 's|/postgres?|/sgbench?|')
	gateway_conf "[4, 64]" 0
	bench_gateway "$gw"
	store_rows postgresql
	echo
	echo "CPU a session request at c=16 by process (utime + stime from \`/proc\`, the client's"
	echo "from \`time\`), over the runs above: the two cores are shared by all of them."
	echo
	echo "| store | requests | gateway (responders, master, reaper) | PostgreSQL server | fakes | client | all |"
	echo "| --- | --- | --- | --- | --- | --- | --- |"
	cat "$dir/store_cpu.raw"
	echo
	kill "$lpid"; wait "$lpid" 2>/dev/null || true
	sh "$root/tests/pg/stop.sh" "$pgd" >/dev/null 2>&1 || true
	store_url=
	gateway_conf "[4, 64]" 0
	bench_gateway "$gw"
}

# ---------------------------------------------------------------- the queue
# Bursts wait their turn: N requests of one key with workers = 4, another
# key's request sent during them; then wrk at c=64 on the default pool,
# counting what was not 2xx.
part_queue() {
	echo "### Bursts: the queue"
	echo
	kill "$lpid"; wait "$lpid" 2>/dev/null || true
	gateway_conf "4" 0
	bench_gateway "$gw"
	node "$here/queue_client.mjs" "http://127.0.0.1:$gw/v1/chat/completions" "$key" "$key2" 40
	kill "$lpid"; wait "$lpid" 2>/dev/null || true
	gateway_conf "[4, 64]" 0
	bench_gateway "$gw"
	BODY_FILE="$dir/json.body" wrk -t2 -c64 -d"${secs}s" -s "$here/post.lua" \
	    "http://127.0.0.1:$gw/v1/chat/completions" > "$dir/wrk.out"
	awk '/requests in/ { n = $1 } /Non-2xx/ { bad = $NF } /Socket errors/ { sock = $0 }
	END { printf "| wrk -t2 -c64 -d'"$secs"'s, passthrough chat JSON, `workers = [4, 64]` | %d | %d non-2xx%s | |\n",
	    n - bad, bad, (sock == "" ? "" : "; " sock) }' "$dir/wrk.out"
	echo
}

# What the ledger and a key's limits cost the passthrough: the same rows
# with this tree's binary and with BENCH_BASE's (built in $dir/base), in
# turns, twice each (the machine's noise moves both alike); the CPU per
# request of the backend (responders, master and the reaper that writes
# the ledger) and the p50 at c=1, for a key without limits and one with
# rpm and a budget.
ledger_rows() { # label
	g="http://127.0.0.1:$gw"
	p50=$(wrk_row 1 "$g/v1/chat/completions" "$dir/json.body" | cut -d' ' -f2)
	cpu_row "$1" "$g/v1/chat/completions" "$dir/json.body" gateway_pids |
	    sed "s/ |\$/ | $p50 µs |/"
}
part_ledger() {
	lbase=${BENCH_BASE:-a25849d}	# base is the ports' start
	echo "### The ledger and limits: what they cost the passthrough"
	echo
	if ! git -C "$root" rev-parse -q --verify "$lbase^{commit}" >/dev/null; then
		echo "Skipped: no commit $lbase here to compare with (\`BENCH_BASE\`)."
		echo
		return
	fi
	git -C "$root" worktree add -q --detach "$dir/base" "$lbase"
	make -s -C "$dir/base" build/sandgate-fcgi >/dev/null
	echo "\`BENCH_PARTS=ledger sh bench/run.sh\`: this tree against $lbase (before the"
	echo "ledger), each twice in turns; CPU per request by process at c=16, p50 at c=1."
	echo
	echo "| what | requests | wrk | lighttpd | backend (responders + master + reaper) | fake upstream | all | c=1 p50 |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
	for round in 1 2; do
		for which in base this this-limited; do
			kill "$lpid"; wait "$lpid" 2>/dev/null || true
			gw_bin=$root/build/sandgate-fcgi
			[ $which = base ] && gw_bin=$dir/base/build/sandgate-fcgi
			gateway_conf "[4, 64]" 0
			# Each its own store: the base's schema is older.
			[ $which = base ] && sed -i "s|$dir/store/|$dir/store-base/|" "$dir/sandgate.conf"
			[ $which = this-limited ] && sed -i 's|{ name = "bench"; key_sha256|{ name = "bench"; rpm = 100000000; budget = 1000000.0; key_sha256|' "$dir/sandgate.conf"
			bench_gateway "$gw"
			ledger_rows "$which ($round)"
		done
	done
	gw_bin=
	git -C "$root" worktree remove --force "$dir/base"
	echo
}

# ---------------------------------------------------------------- background responses
# 200 background responses created at once (bench/bg_client.mjs: 16
# requests at a time, each job then polled every 500 ms) with /healthz
# probed every 100 ms throughout, against a probe of the same gateway
# with no load; the runners' memory idle and while they run jobs; the
# jobs' own times from the store. With the default runners, then more.
runners() { # master pid -> runner pids
	for p in $(pgrep -P "$1"); do
		[ "$(cat /proc/$p/comm)" = sg-runner ] && echo "$p"
	done
	return 0
}
as_gateway() { # command...: as the gateway's user (the store's files stay its)
	if [ "$(id -u)" -eq 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi
}
bg_round() { # runners max_per_key model
	kill "$lpid"; wait "$lpid" 2>/dev/null || true
	gateway_conf "[4, 64]" 0
	sed -i "s|$dir/store/|$dir/store-bg$1-$3/|; s|^models = (|models = (\n  { name = \"ci-1-think\"; api_base = \"http://127.0.0.1:$bgup/v1\"; api_key = \"x\"; model = \"ci-1\"; state = \"gateway\"; },|" "$dir/sandgate.conf"
	echo "background: { runners = $1; max_per_key = $2; };" >> "$dir/sandgate.conf"
	bench_gateway "$gw"
	sleep 1
	master=$(pgrep -f "^$root/build/sandgate-fcgi --config $dir" -o)
	db="$dir/store-bg$1-$3/sandgate.db"
	mem_line "runners idle (runners = $1)" $(runners "$master") >> "$dir/bgmem.md"
	node "$here/bg_client.mjs" probe "http://127.0.0.1:$gw/healthz" 10 < /dev/null > "$dir/bgbase.json"
	rm -f "$dir/bg.mark"
	node "$here/bg_client.mjs" run "http://127.0.0.1:$gw" "$key" 200 16 "$3" "$dir/bg.mark" > "$dir/bg.json" &
	bcl=$!
	for i in $(seq 600); do [ -e "$dir/bg.mark" ] && break; sleep 0.1; done
	sleep 1
	busy=$(as_gateway sqlite3 "$db" "SELECT count(*) FROM bg WHERE status = 'in_progress'")
	mem_line "runners running jobs (runners = $1, \`$3\`; $busy in progress)" $(runners "$master") >> "$dir/bgmem.md"
	mem_line "responders, same moment" $(responders "$master") >> "$dir/bgmem.md"
	wait $bcl
	as_gateway sqlite3 -json "$db" "SELECT status, created_ms, started_ms, ended_ms FROM bg" > "$dir/bgstore.json"
	node -e '
const fs = require("fs"), [, c, b, s, r, m, model] = process.argv;
const run = JSON.parse(fs.readFileSync(c, "utf8")), base = JSON.parse(fs.readFileSync(b, "utf8"));
const rows = JSON.parse(fs.readFileSync(s, "utf8") || "[]");
if (run.bad || run.unended) console.error(`bench: background: ${run.bad} bad answers, ${run.unended} not ended; first: ${run.firstBad}`);
const pct = (a, p) => { const x = [...a].sort((u, v) => u - v); return x.length ? x[Math.min(x.length - 1, Math.floor(p * x.length))] : "-"; };
const life = rows.filter((j) => j.ended_ms).map((j) => j.ended_ms - j.created_ms);
const wait = rows.filter((j) => j.started_ms).map((j) => j.started_ms - j.created_ms);
const span = Math.max(...rows.map((j) => j.ended_ms ?? 0)) - Math.min(...rows.map((j) => j.created_ms));
const done = rows.filter((j) => j.status === "completed").length;
const ms = (us) => us == null ? "-" : (us / 1000).toFixed(1) + " ms";
console.log(`| \`${model}\` | ${r} (max_per_key ${m}) | ${run.created} / ${done} | ${(span / 1000).toFixed(1)} s (${(done / span * 1000).toFixed(1)}/s) | ` +
  `${ms(run.create.p50)} / ${ms(run.create.p99)} | ${pct(wait, 0.5)} / ${pct(wait, 0.99)} ms | ${pct(life, 0.5)} / ${pct(life, 0.99)} ms | ` +
  `${ms(base.p50)} / ${ms(base.p99)} / ${ms(base.max)}, ${base.fail} of ${base.probes} failed | ` +
  `${ms(run.probe.p50)} / ${ms(run.probe.p99)} / ${ms(run.probe.max)}, ${run.probe.fail} of ${run.probe.probes} failed | ${run.polls} |`);' \
	    "$dir/bg.json" "$dir/bgbase.json" "$dir/bgstore.json" "$1" "$2" "$3"
}
part_background() {
	echo "### Background responses"
	echo
	echo "\`BENCH_PARTS=background sh bench/run.sh\`: \`node bench/bg_client.mjs\` creates 200"
	echo "background responses at once (16 requests at a time; model \`ci-1\` of \`bench/fakes.mjs\`:"
	echo "one code round on the e2b fake, then the answer; \`ci-1-think\`: the same through"
	echo "\`bench/delay_proxy.mjs\`, each model turn answered 150 ms late), then polls each every"
	echo "500 ms until it ends; a probe process GETs /healthz every 100 ms throughout. Baseline: the same"
	echo "probe for 10 s on the same gateway just before, with no load. Times of the jobs"
	echo "from the store (created → started: the queue; created → ended); the span is from"
	echo "the first create to the last end. \`workers = [4, 64]\`."
	echo
	echo "| model | runners | created / completed | span (jobs a second) | create p50 / p99 | queue wait p50 / p99 | created → ended p50 / p99 | /healthz, no load: p50 / p99 / max | /healthz under the load: p50 / p99 / max | polls |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	: > "$dir/bgmem.md"
	bgup=$((base + 3))
	node "$here/delay_proxy.mjs" "$bgup" "$up" 150 & bgpid=$!
	bg_round 2 4 ci-1
	bg_round 2 4 ci-1-think
	bg_round 8 8 ci-1-think
	kill "$bgpid"
	echo
	echo "Memory (\`/proc/PID/smaps_rollup\`, as above): the runners idle, then while they run"
	echo "jobs (sampled 1 s after the last create was answered), and the responders then."
	echo
	echo "| processes | how many | PSS each (mean) | PSS max | USS each (mean) | PSS all |"
	echo "| --- | --- | --- | --- | --- | --- |"
	cat "$dir/bgmem.md"
	echo
	kill "$lpid"; wait "$lpid" 2>/dev/null || true
	gateway_conf "[4, 64]" 0
	bench_gateway "$gw"
}

part_hold() {
	echo "bench: holding: gateway $gw, upstream $up, e2b $e2b, dir $dir" >&2
	sleep "${BENCH_HOLD:-600}"
}

part_local() {
	echo "### The local sandbox"
	echo
	if [ "$(id -u)" -ne 0 ]; then
		echo "Skipped: \`bench/local.sh\` runs as root (each sandbox its own uid)."
		echo
		return
	fi
	echo "\`sh bench/local.sh 100\`: cold = \`POST /v1/sandboxes\` + the first \`print(1)\`,"
	echo "warm = a run in a live sandbox, for each local tool (see the sections below)."
	echo
	echo '```'
	sh "$here/local.sh" 100 2>&1
	echo '```'
	echo
}

part_pool() {
	echo "### The warm pool"
	echo
	if [ "$(id -u)" -ne 0 ]; then
		echo "Skipped: \`bench/pool.sh\` runs as root (its local tools' sandboxes each their own uid)."
		echo
		return
	fi
	echo "\`sh bench/pool.sh 30 700\`: a sandbox's first code run with \`warm = 2\` against"
	echo "\`warm = 0\`, on the local sandbox and the e2b fake (\`tests/fakes/e2b.py\`); the"
	echo "baseline is a warm run (a run in a live sandbox), each timed step after the"
	echo "same 700 ms pause. Create = \`POST /v1/sandboxes\` (a claim, or a cold create)."
	echo
	sh "$here/pool.sh" 30 700 2>&1
	echo
}

part_oneshot() {
	echo "### One-shot code runs"
	echo
	echo "\`sh bench/oneshot.sh 40 300\`: \`POST /v1/code\` (a sandbox made, or claimed from"
	echo "a warm pool of 2, one run, the sandbox deleted after the answer) against a run in a"
	echo "live sandbox, on the e2b fake, 40 rounds each 300 ms apart. Target: one-shot p50"
	echo "≤ 1.5× the live run's where the pool is warm."
	echo
	sh "$here/oneshot.sh" 40 300 2>&1
	echo
}

{
	echo "<!-- make bench: begin (generated by bench/run.sh; edits here are overwritten) -->"
	echo "## make bench, $(date -u +%Y-%m-%dT%H:%MZ)"
	echo
	echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)," \
	    "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(. /etc/os-release; echo "$PRETTY_NAME"), Linux $(uname -r)."
	echo "Versions: $(lighttpd -v 2>&1 | head -1 | cut -d' ' -f1), $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)," \
	    "node $(node -v), sandgate $(git -C "$root" describe --always --dirty 2>/dev/null || echo '?')," \
	    "libfcgi $(dpkg-query -W -f='${Version}' libfcgi-dev 2>/dev/null || echo '?')."
	echo "Command: \`make bench\` (\`BENCH_SECS=$secs sh bench/run.sh\`). sandgate \`workers = [4, 64]\`"
	echo "(heavy requests past 64 at once wait their turn: \`server.queue_timeout\`), keys"
	echo "without a \`max_concurrent\` of their own, checked on every request, \`bench/fakes.mjs\`"
	echo "as upstream and e2b; the bare responder runs 4 processes."
	echo
	for p in $parts; do "part_$p"; done
	echo "<!-- make bench: end -->"
} | tee "$out"

if [ -z "${BENCH_NO_WRITE:-}" ]; then
	# Between the markers; a file without them gets the part at its end.
	f="$here/RESULTS.md"
	if grep -q '^<!-- make bench: begin' "$f"; then
		awk -v gen="$out" '
		/^<!-- make bench: begin/ { while ((getline l < gen) > 0) print l; skip = 1; next }
		/^<!-- make bench: end/ { skip = 0; next }
		!skip { print }' "$f" > "$f.new" && mv "$f.new" "$f"
	else
		{ echo; cat "$out"; } >> "$f"
	fi
fi
