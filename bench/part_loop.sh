# `make bench`'s loop part (sourced by bench/run.sh, with its variables:
# $secs, $here, $root, $dir, the fakes' ports $up and $e2b, the gateway's
# $gw and its $key, wrk_row): the interception loop against zero-latency
# fakes, its floor, and where the iteration's time and tail go.
part_loop() {
	echo "### The interception loop against zero-latency fakes"
	echo
	echo "\`node bench/loop_client.mjs\` for ${secs}s per row: \`/v1/responses\` with"
	echo "\`code_interpreter\`, models \`ci-1\` / \`ci-3\` of \`bench/fakes.mjs\` (one or three"
	echo "code rounds, then the answer), the e2b tool on its fake. Ephemeral"
	echo "(\`container_reuse = \"none\"\`): each request creates its sandbox, deleted"
	echo "after its answer; sticky: each connection its own"
	echo "session (made before timing). \`gateway\` = client total − the fakes' time on"
	echo "that request; \`iteration\` = from the end of one model turn to the start of the"
	echo "next, minus the fakes' time in between (the gateway's work per loop round)."
	echo
	echo "| rounds | mode | c | req/s | total p50 | total p99 | gateway p50 | gateway p99 | iteration p50 | iteration p99 |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	for mode in ephemeral sticky; do
		for m in ci-1 ci-3; do
			for c in 1 64; do
				s=; [ $mode = sticky ] && s=sticky
				FAKE_UPSTREAM="http://127.0.0.1:$up" node "$here/loop_client.mjs" \
				    "http://127.0.0.1:$gw/v1/responses" "$key" "$m" "$c" "$secs" $s > "$dir/loop.json"
				cat "$dir/loop.json" >> "$dir/loop.raw"
				node -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
if (r.bad) console.error(`bench: ${r.bad} bad answers, first: ${r.firstBad}`);
const us = (v) => v == null ? "-" : v + " µs";
console.log(`| ${r.model.slice(3)} | ${process.argv[2]} | ${r.conc} | ${Math.round(r.rps)} | ${us(r.total.p50)} | ${us(r.total.p99)} | ` +
  `${us(r.gateway.p50)} | ${us(r.gateway.p99)} | ${us(r.iter.p50)} | ${us(r.iter.p99)} |`);' "$dir/loop.json" $mode
			done
		done
	done
	echo
	echo "The fakes' own time per call in the same runs (p50 / p99), and what each"
	echo "sustains on its own (wrk, c=64): the gateway is the slower part."
	echo
	node -e '
const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
const all = {};
for (const l of lines) for (const [k, v] of Object.entries(l.fakes)) (all[k] ||= []).push(v);
for (const [k, v] of Object.entries(all)) {
  const p50 = Math.max(...v.map((s) => s.p50)), p99 = Math.max(...v.map((s) => s.p99));
  console.log(`- ${k}: p50 ≤ ${p50} µs, p99 ≤ ${p99} µs`);
}' "$dir/loop.raw"
	printf '{"model":"ci-1","input":"bench req-1","stream":true,"tools":[{"type":"function","name":"f"}]}' > "$dir/turn.body"
	set -- $(wrk_row 64 "http://127.0.0.1:$up/v1/responses" "$dir/turn.body")
	echo "- fake model turn alone: $1 req/s, p50 $2 µs"
	printf '{"code":"print(\\"req-1 0\\")"}' > "$dir/run.body"
	set -- $(HEADER="E2b-Sandbox-Id: ibench" wrk_row 64 "http://127.0.0.1:$e2b/execute" "$dir/run.body")
	echo "- fake sandbox run alone: $1 req/s, p50 $2 µs"
	echo "- one libcurl transfer at a time, nothing else (\`bench/curl_floor.c -t\`, chat JSON" \
	    "from the fake model): $("$root/build/bench/curl_floor" -t \
	    "http://127.0.0.1:$up/v1/chat/completions" 5000 | sed 's/^a transfer: //')"
	for m in ci-1 ci-3; do
		loop_floor "$m" > "$dir/floor-$m.json"
		node -e '
const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
console.log(`- the loop floor, ${r.model.slice(3)} round(s) a request (\`bench/loop_floor.c\`: the ` +
  `same exchanges by libcurl, no gateway, c=1): iteration p50 ${r.iter.p50} µs, p99 ${r.iter.p99} µs ` +
  `(${r.stalled[0]} / ${r.stalled[1]} a second over 1 / 2 ms); total p50 ${r.total.p50} µs`);' < "$dir/floor-$m.json"
	done
	curl -s "http://127.0.0.1:$up/__times" >/dev/null
	echo
	loop_gaps
}

# The loop's floor (bench/loop_floor.c), MODEL's rounds at c=1: its JSON.
loop_floor() {
	LOOP_FLOOR="$root/build/bench/loop_floor" E2B_BASE="http://127.0.0.1:$e2b" \
	    FAKE_UPSTREAM="http://127.0.0.1:$up" node "$here/loop_client.mjs" - - "$1" 1 "$secs"
}

# Sticky ci-3 at c=1 through the gateway: its JSON.
loop_sticky3() {
	FAKE_UPSTREAM="http://127.0.0.1:$up" node "$here/loop_client.mjs" \
	    "http://127.0.0.1:$gw/v1/responses" "$key" ci-3 1 "$secs" sticky
}

# Where the iteration's time and tail go, against what is not sandgate's:
# each exchange's gap, the gateway's against the floor's; the machine's own
# stalls (a thread on each core that never sleeps, counting the time it did
# not run); both loops again on a quiet machine, with a SCHED_IDLE spinner
# on each core (this machine kind's virtual CPUs halt when idle, and a
# halted one wakes through the host) and, to leave nothing of the last
# request running beside the next one's first round, 3 ms between requests.
loop_gaps() {
	ncpu=$(nproc)
	echo "Each exchange's gap in a sticky three-round request at c=1 (from one fake call's end to"
	echo "the next call's start, by the fakes' clock: the gateway's work and the two hops), p50 /"
	echo "p99 in µs: the gateway's (the sticky row above) and the loop floor's, the first round"
	echo "apart from the later two."
	echo
	echo "| gap | gateway, round 1 | gateway, rounds 2-3 | floor, round 1 | floor, rounds 2-3 |"
	echo "| --- | --- | --- | --- | --- |"
	node -e '
const fs = require("fs");
const gw = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse)
  .find((r) => r.model === "ci-3" && r.conc === 1 && r.sticky);
const fl = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const cell = (r, k) => r.gaps[k] ? `${r.gaps[k].p50} / ${r.gaps[k].p99}` : "-";
for (const [k, name] of [["model->run", "a turn ends, the run starts"],
    ["run->list", "the run ends, the listing starts"], ["list->model", "the listing ends, the next turn starts"]])
  console.log(`| ${name} | ${cell(gw, "first " + k)} | ${cell(gw, "later " + k)} | ` +
    `${cell(fl, "first " + k)} | ${cell(fl, "later " + k)} |`);
console.log(`\nIterations over 1 ms / over 2 ms, a second: the gateway ${gw.stalled[0]} / ${gw.stalled[1]}, ` +
  `the loop floor ${fl.stalled[0]} / ${fl.stalled[1]}.`);' "$dir/loop.raw" "$dir/floor-ci-3.json"
	echo
	# Their own pids: a bare wait would also wait for a gateway an
	# earlier part restarted in this shell.
	pids=
	for c in $(seq 0 $((ncpu - 1))); do
		taskset -c "$c" "$root/build/bench/stalls" "$secs" > "$dir/stalls.$c" &
		pids="$pids $!"
	done
	wait $pids
	printf -- "- the machine's own stalls, nothing else running (\`bench/stalls.c\`, a thread pinned to each core for %ss):" "$secs"
	for c in $(seq 0 $((ncpu - 1))); do
		printf " core %s: %s;" "$c" "$(cat "$dir/stalls.$c")"
	done | sed 's/;$/./'
	echo
	spin=
	for c in $(seq 0 $((ncpu - 1))); do
		chrt -i 0 taskset -c "$c" "$root/build/bench/stalls" -k $((secs * 5 + 30)) &
		spin="$spin $!"
	done
	loop_sticky3 > "$dir/quiet-gw.json"
	LOOP_GAP_MS=3 loop_sticky3 > "$dir/quiet-gw-spaced.json"
	loop_floor ci-3 > "$dir/quiet-floor.json"
	LOOP_GAP_MS=3 loop_floor ci-3 > "$dir/quiet-floor-spaced.json"
	kill $spin 2>/dev/null || true
	wait $spin 2>/dev/null || true
	node -e '
const fs = require("fs");
const [gw, gws, fl, fls] = process.argv.slice(1).map((f) => JSON.parse(fs.readFileSync(f, "utf8")));
const it = (r) => `${r.iter.p50} / ${r.iter.p99} µs (${r.stalled[0]} / ${r.stalled[1]} a second over 1 / 2 ms)`;
console.log("- the same on a quiet machine (a SCHED_IDLE spinner on each core), sticky three rounds " +
  `at c=1, iteration p50 / p99: the gateway ${it(gw)} back to back, ${it(gws)} with 3 ms between ` +
  `requests; the loop floor ${it(fl)} back to back, ${it(fls)} with 3 ms between requests`);' \
	    "$dir/quiet-gw.json" "$dir/quiet-gw-spaced.json" "$dir/quiet-floor.json" "$dir/quiet-floor-spaced.json"
	curl -s "http://127.0.0.1:$up/__times" >/dev/null
	echo
}
