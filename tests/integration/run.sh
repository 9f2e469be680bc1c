#!/bin/sh
# The integration suite, three times: (1) as root, lighttpd spawning the
# normal build on fd 0 and the responders dropping to the service user;
# (2) the ASan+UBSan build started with --listen as that unprivileged user
# (or as ourselves when we are not root); (3) the store on PostgreSQL: a
# throwaway cluster (tests/pg/start.sh) whose maintenance URL is SG_PG,
# each stack in a database of its own, over the tests of what the store
# keeps. run.sh [root|listen|pg]... runs only those passes.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
user=${SG_USER:-sgtest}
if [ "$(id -u)" -eq 0 ] && ! id "$user" >/dev/null 2>&1; then
	useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
fi
passes=${*:-root listen pg}
# run VAR=VALUE...: the test files in $files (every one by default).
files="./*.test.mjs"
# Every test is a failure past TEST_TIMEOUT_MS (5 minutes) instead of a
# hang, and a whole pass past PASS_TIMEOUT_S (an hour) is stopped: a test
# whose loop never yields to the event loop outlives any timer of node's.
run() {
	echo "== integration: $*"
	# shellcheck disable=SC2086 # a list of test files, globs included
	timeout -k 30 "${PASS_TIMEOUT_S:-3600}" env "$@" node --test --test-concurrency=1 \
	    --test-timeout="${TEST_TIMEOUT_MS:-300000}" $files
}
# What the PostgreSQL pass runs: the tests of what the store keeps and
# shares, migrate (SQLite into PostgreSQL: it needs SG_PG, so only this
# pass runs it), every multibox test (gateways of several boxes on one
# database), and the ledger and limits (two boxes sharing a key's).
pg_tests="sessions conversation sandboxes containers files
code-output-files audit-files warm-pool metrics pool lifecycle migrate
ledger limits usage-api usage-exact keys-api cli-keys requests-api console console-api
conversations-api resume background mcp mcp-wire store-trips"
for p in $passes; do
	case $p in
	# and, once, the 5-minute background run through nginx
	# (background-nginx.test.mjs: SG_SLOW), with room for it.
	root)
		run SG_START=binpath SG_BUILD=build SG_USER="$user"
		files=./background-nginx.test.mjs
		per_test=${TEST_TIMEOUT_MS:-300000}
		TEST_TIMEOUT_MS=600000
		run SG_START=binpath SG_BUILD=build SG_USER="$user" SG_SLOW=1
		TEST_TIMEOUT_MS=$per_test
		files="./*.test.mjs"
		;;
	listen) run SG_START=listen SG_BUILD=build/asan SG_USER="$user" ;;
	pg)
		pgdir=$(mktemp -d "${TMPDIR:-/tmp}/sgpg-XXXXXX")
		trap 'sh "$here/../pg/stop.sh" "$pgdir" || true; rm -rf "$pgdir"' EXIT
		trap 'exit 130' INT
		trap 'exit 143' TERM
		url=$(SG_USER="$user" sh "$here/../pg/start.sh" "$pgdir")
		files=""
		for t in $pg_tests; do files="$files ./$t.test.mjs"; done
		for t in ./multibox*.test.mjs; do
			if [ -e "$t" ]; then files="$files $t"; fi
		done
		run SG_START=binpath SG_BUILD=build SG_USER="$user" SG_PG="$url"
		files="./*.test.mjs"
		;;
	*) echo "run.sh: no pass $p (root, listen, pg)" >&2; exit 2 ;;
	esac
done
