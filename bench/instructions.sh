#!/bin/sh
# What a request costs in instructions, by process kind: callgrind on a
# gateway (`workers = [2, 2]`) behind lighttpd at c=1 for SECS seconds, for
# each build root given (this tree's and a base built the same way).
# Deterministic where wrk's timings are not (the machine is shared): the
# ledger's cost is read here. What is asked (BENCH_ASK):
#   chat     chat JSON passthrough, by wrk (the default)
#   healthz  GET /healthz, by wrk
#   loop     /v1/responses with code_interpreter, three code rounds in a
#            session on the e2b fake (bench/loop_client.mjs ci-3 sticky;
#            BENCH_MODEL=ci-1 for one round: the difference is two rounds)
#   sh bench/instructions.sh SECS ROOT...   (each ROOT with build/sandgate-fcgi)
# BENCH_KEEP=1 keeps each root's profiles (callgrind_annotate them; the
# folder is printed); BENCH_ONLY=FN collects only inside FN (the
# profiles then hold one request kind's cost alone, e.g. sg_gw_handle).
# Prints per ROOT: | root | requests | in sg_gw_handle | the responder's
# whole loop (accept to finish: libfcgi, the log) | the reaper's ledger |,
# each per request.
# BENCH_TIMED=1 (with BENCH_ASK=loop) runs the same stack without
# callgrind and prints the client's times instead: | root | requests |
# total p50 | gateway p50 | iteration p50 | (µs; bench/loop_client.mjs).
# BENCH_TURNS=N goes through the ROOTs N times, in turns (two builds'
# times on a noisy machine).
set -eu
secs=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
roots=$*
wrap="/usr/bin/valgrind --tool=callgrind${BENCH_ONLY:+ --toggle-collect=$BENCH_ONLY} --trace-children=yes --callgrind-out-file=OUT/cg.%p"
[ -n "${BENCH_TIMED:-}" ] && wrap=
for turn in $(seq "${BENCH_TURNS:-1}"); do
for root in $roots; do
	root=$(cd "$root" && pwd)	# lighttpd starts the binary from elsewhere
	out=$(mktemp -d /tmp/sgcg.XXXXXX)
	chmod 1777 "$out"	# the responders (nobody) write their profiles here
	mkdir -p "$out/www" "$out/store"
	chown nobody "$out/store" 2>/dev/null || true
	port=$((30000 + $$ % 1000)); up=$((port + 1)); gw=$((port + 2))
	e2b=$((port + 3))
	node "$here/fakes.mjs" "$up" "$e2b" & fpid=$!
	key=bench-key
	cat > "$out/sandgate.conf" <<CONF
server: { workers = [2, 2]; user = "nobody"; };
store: { path = "$out/store/sandgate.db"; };
auth: { keys = ( { name = "bench"; key_sha256 = "$(printf %s "$key" | sha256sum | cut -d' ' -f1)"; } ); };
models = ( { name = "bench"; api_base = "http://127.0.0.1:$up/v1"; api_key = "x"; model = "echo"; },
  { name = "ci-1"; api_base = "http://127.0.0.1:$up/v1"; api_key = "x"; state = "gateway"; },
  { name = "ci-3"; api_base = "http://127.0.0.1:$up/v1"; api_key = "x"; state = "gateway"; } );
sandbox_tools = ( { name = "e2b"; provider = "e2b"; api_key = "e2b_bench"; api_base = "http://127.0.0.1:$e2b";
    sandbox_url = "http://127.0.0.1:$e2b"; } );
interception: { sandbox_tool = "e2b"; };
background: { runners = 0; };
CONF
	cat > "$out/lighttpd.conf" <<CONF
server.port = $gw
server.bind = "127.0.0.1"
server.document-root = "$out/www"
server.modules += ( "mod_fastcgi" )
\$HTTP["url"] =~ "^/(v1/|healthz$|metrics$)" {
  fastcgi.server = ( "/" => (( "socket" => "$out/fcgi.sock",
    "bin-path" => "${wrap:+$(echo "$wrap" | sed "s|OUT|$out|") }$root/build/sandgate-fcgi --config $out/sandgate.conf",
    "max-procs" => 1, "check-local" => "disable" )) )
}
CONF
	/usr/sbin/lighttpd -D -f "$out/lighttpd.conf" 2>"$out/log" & lpid=$!
	for i in $(seq 300); do
		curl -sf "http://127.0.0.1:$gw/healthz" >/dev/null 2>&1 && break
		sleep 0.2
	done
	printf '{"model":"bench","messages":[{"role":"user","content":"hi"}]}' > "$out/body"
	case ${BENCH_ASK:-chat} in
	chat)	BODY_FILE="$out/body" wrk -t1 -c1 -d"${secs}s" -s "$here/post.lua" \
		    "http://127.0.0.1:$gw/v1/chat/completions" > "$out/wrk.out" ;;
	healthz) wrk -t1 -c1 -d"${secs}s" "http://127.0.0.1:$gw/healthz" > "$out/wrk.out" ;;
	loop)	FAKE_UPSTREAM="http://127.0.0.1:$up" node "$here/loop_client.mjs" \
		    "http://127.0.0.1:$gw/v1/responses" "$key" "${BENCH_MODEL:-ci-3}" 1 "$secs" sticky |
		    node -e 'const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
if (r.bad) console.error(`bench: ${r.bad} bad answers, first: ${r.firstBad}`);
console.log(`${r.reqs} requests in`);
console.log(`| ${process.argv[1]} | ${r.reqs} | ${r.total.p50} | ${r.gateway.p50} | ${r.iter.p50} |`)' \
		    "$root" > "$out/wrk.out" ;;
	esac
	kill $lpid; wait $lpid 2>/dev/null || true
	kill $fpid; wait $fpid 2>/dev/null || true
	if [ -n "$wrap" ]; then sleep 3; else
		grep '^|' "$out/wrk.out" || cat "$out/wrk.out"
		rm -rf "$out"
		continue
	fi
	python3 - "$out" "$root" <<'PY'
import glob, re, sys
out, root = sys.argv[1], sys.argv[2]
n = int(re.search(r'(\d+) requests in', open(out + '/wrk.out').read()).group(1))
min_calls = 100 if n > 1000 else 5
steady, whole, reaper = [], [], 0

def loop_cost(txt, n):
    # What the responder's loop spends on its requests: the callees of
    # sg_responder_run called about once a request (accept, the params,
    # the answer, the log, the finish), not its start and its end.
    m = re.search(r'\((\d+)\) sg_responder_run\b', txt)
    if not m:
        return 0
    fid, total, inside, callee_calls = m.group(1), 0, False, None
    for line in txt.splitlines():
        if line.startswith('fn='):
            inside = re.match(r'fn=\(%s\)' % fid, line) is not None
            continue
        if not inside:
            continue
        if line.startswith('calls='):
            callee_calls = int(line[6:].split()[0])
        elif callee_calls is not None and (line[:1].isdigit() or
                line[:1] in '+-*'):
            if callee_calls >= n // 2:
                total += int(line.split()[-1])
            callee_calls = None
    return total
for f in glob.glob(out + '/cg.*'):
    txt = open(f).read()
    if 'sg_reaper_run' in txt:
        # The reaper's work on requests: what drains the ledger.
        m = re.search(r'\((\d+)\) sg_use_drain\b', txt)
        calls = re.findall(r'cfn=\(%s\)[^\n]*\ncalls=\d+[^\n]*\n\S+ (\d+)' % m.group(1), txt) if m else []
        reaper += sum(int(c) for c in calls)
        continue
    m = re.search(r'\((\d+)\) sg_gw_handle\b', txt)
    if not m:
        continue
    calls = ir = 0
    for c, i in re.findall(r'cfn=\(%s\)[^\n]*\ncalls=(\d+)[^\n]*\n\S+ (\d+)' % m.group(1), txt):
        calls += int(c); ir += int(i)
    if calls > min_calls:  # a responder that served: its first request aside
        steady.append(ir / calls)
        whole.append(loop_cost(txt, calls) / calls)
print("| %s | %d | %.0f | %.0f | %.0f |" % (root, n, sum(steady) / len(steady),
    sum(whole) / len(whole), reaper / n))
PY
	if [ -n "${BENCH_KEEP:-}" ]; then
		echo "profiles of $root kept in $out"
	else
		rm -rf "$out"
	fi
done
done
