#!/bin/sh
# `make run`: the dev config through lighttpd on http://127.0.0.1:8080,
# in the foreground. Ctrl-C stops lighttpd and with it sandgate. What it
# needs `make run` installed first (tests/install-deps.sh serve): nothing
# of the tests', and no service is started or stopped but this lighttpd.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
run="$root/build/run"
mkdir -p "$run/www"
export SANDGATE_ROOT="$root" SANDGATE_RUN="$run" SANDGATE_PORT="${PORT:-8080}"
# Where model requests go: OpenAI, unless OPENAI_BASE_URL names another
# OpenAI-compatible server (tests/fakes/upstream.py, to try the loop
# without a model).
export OPENAI_BASE_URL="${OPENAI_BASE_URL:-https://api.openai.com/v1}"
"$root/build/sandgate" --config "$root/etc/sandgate-dev.conf" check-config || true
echo "sandgate: http://127.0.0.1:$SANDGATE_PORT (try: curl http://127.0.0.1:$SANDGATE_PORT/healthz)"
exec /usr/sbin/lighttpd -D -f "$root/etc/lighttpd-dev.conf"
