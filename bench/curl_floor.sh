#!/bin/sh
# libcurl's instructions a passthrough transfer, sandgate aside: builds
# bench/curl_floor.c, runs it under callgrind for 50 and 250 transfers to
# bench/fakes.mjs, and prints the difference over 200 (the first
# transfer's connect and libcurl's start cancel out). Flags for
# curl_floor (-r, -s: a reset a transfer, the URL as text) are passed on.
#   sh bench/curl_floor.sh [-r] [-s]
set -eu
flags="$*"
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d /tmp/sgcurl.XXXXXX)
trap 'kill $fpid 2>/dev/null || true; rm -rf "$out"' EXIT
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$out/curl_floor" "$here/curl_floor.c" -lcurl
port=$((31000 + $$ % 1000))
node "$here/fakes.mjs" "$port" "$((port + 1))" & fpid=$!
for i in $(seq 100); do
	curl -sf -o /dev/null "http://127.0.0.1:$port/v1/models" && break
	sleep 0.1
done
ir() {
	valgrind --tool=callgrind --callgrind-out-file="$out/cg.$1" \
	    "$out/curl_floor" $flags "http://127.0.0.1:$port/v1/chat/completions" "$1" \
	    2>&1 | sed -n 's/.*refs: *\([0-9,]*\).*/\1/p' | tr -d ,
}
a=$(ir 50)
b=$(ir 250)
echo "libcurl alone: $(( (b - a) / 200 )) instructions a transfer ($a for 50, $b for 250)"
