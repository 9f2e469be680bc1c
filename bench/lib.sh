# Shared by the bench scripts (sourced): a gateway behind lighttpd, in a
# fresh directory, stopped and removed on exit.
#   bench_setup            $dir (world-traversable), $root, cleanup trap
#   bench_fakes UP E2B [SLOW]  bench/fakes.mjs, waited for ($upid)
#   bench_gateway PORT [CONF]  lighttpd on PORT spawning sandgate-fcgi with
#                          $dir/sandgate.conf (and CONF, more lighttpd
#                          settings); returns once /healthz answers. The
#                          binary is $gw_bin (default: this tree's build)
bench_setup() {
	root=$(cd "$(dirname "$0")/.." && pwd)
	make -s -C "$root" all
	dir=$(mktemp -d /tmp/sgbench.XXXXXX)
	chmod 755 "$dir"
	mkdir -p "$dir/www"
	trap bench_cleanup EXIT INT TERM
}

bench_cleanup() {
	[ -n "${lpid:-}" ] && kill "$lpid" 2>/dev/null || true
	# A gateway restarted inside a pipeline's subshell (run.sh's parts)
	# left its pid there: the file has the last one.
	[ -f "$dir/lpid" ] && kill "$(cat "$dir/lpid")" 2>/dev/null || true
	# The store part's PostgreSQL, when a failure left it running.
	[ -d "$dir/pg/data" ] && sh "$root/tests/pg/stop.sh" "$dir/pg" >/dev/null 2>&1 || true
	[ -n "${upid:-}" ] && kill "$upid" 2>/dev/null || true
	sleep 1
	rm -rf "$dir"
}

# bench/fakes.mjs (the model on UP, e2b on E2B; a slow stream lasts SLOW
# seconds, default 10): its pid in $upid (bench_cleanup stops it);
# returns once it answers. Its young generation fixed at 64 MiB: V8's
# default one, grown as it goes, was collected ~20 times a second under
# the loop's load (0.3-1.2 ms each, its helper threads on both cores),
# between the fakes' timed calls, where their clock cannot take it out.
bench_fakes() { # UP E2B [SLOW]
	SLOW_S=${3:-10} node --min-semi-space-size=64 --max-semi-space-size=64 \
	    "$root/bench/fakes.mjs" "$1" "$2" & upid=$!
	for i in $(seq 100); do
		curl -sf -o /dev/null "http://127.0.0.1:$1/v1/models" && break
		sleep 0.1
	done
}

# The e2b fake (tests/fakes/e2b.py) on a port of its own: its URL in $e2b,
# its pid in $upid (bench_cleanup stops it).
bench_e2b() {
	python3 "$root/tests/fakes/e2b.py" --port 0 --port-file "$dir/e2b.port" --api-key e2b_bench --quiet \
	    >/dev/null 2>&1 & upid=$!
	for i in $(seq 50); do [ -s "$dir/e2b.port" ] && break; sleep 0.1; done
	e2b="http://127.0.0.1:$(cat "$dir/e2b.port")"
}

bench_gateway() {
	cat > "$dir/lighttpd.conf" <<CONF
server.port = $1
server.bind = "127.0.0.1"
server.document-root = "$dir/www"
server.modules += ( "mod_fastcgi" )
server.stream-response-body = 2
\$HTTP["url"] =~ "^/(v1/|healthz$|metrics$)" {
  fastcgi.server = ( "/" => (( "socket" => "$dir/fcgi.sock",
    "bin-path" => "${gw_bin:-$root/build/sandgate-fcgi} --config $dir/sandgate.conf",
    "max-procs" => 1, "check-local" => "disable" )) )
}
${2:-}
CONF
	/usr/sbin/lighttpd -D -f "$dir/lighttpd.conf" 2>"$dir/log" & lpid=$!
	echo "$lpid" > "$dir/lpid"
	for i in $(seq 100); do
		curl -sf "http://127.0.0.1:$1/healthz" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "bench: the gateway did not come up (see $dir/log)" >&2
	return 1
}
