#!/bin/sh
# make soak: N (default 2000) mixed requests against the real stack while
# the fakes inject faults and a responder is SIGKILLed every few seconds;
# then the checks (tests/soak/soak.mjs says which). Exit 0 only if all
# hold; the figures are printed as a Markdown section for bench/RESULTS.md.
#
#   sh tests/soak/run.sh [N]
#   SOAK_SEED=7 sh tests/soak/run.sh          another plan (default seed 1)
#   SOAK_BUILD=build/asan sh tests/soak/run.sh the ASan+UBSan build
#
# Needs what `make test` needs (tests/install-deps.sh) and a build.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
n=${1:-2000}
case $n in
'' | *[!0-9]*) echo "usage: $0 [N]" >&2; exit 2 ;;
esac
build=${SOAK_BUILD:-${SG_BUILD:-build}}
for b in sandgate-fcgi sandgate; do
	if [ ! -x "$root/$build/$b" ]; then
		echo "soak: no $build/$b: build first (make, or make asan)" >&2
		exit 2
	fi
done
if [ ! -d "$root/tests/integration/node_modules/ajv" ]; then
	echo "soak: the integration tests' npm packages are missing: run tests/install-deps.sh" >&2
	exit 2
fi
# The service user the responders drop to, as tests/integration/run.sh.
user=${SG_USER:-sgtest}
if [ "$(id -u)" -eq 0 ] && ! id "$user" >/dev/null 2>&1; then
	useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
fi
cd "$root"
# First, that the verdicts find what they must (half a second, no stack).
if ! out=$(node --test "$here/judge.test.mjs" 2>&1); then
	echo "$out" >&2
	echo "soak: the soak's own verdict tests fail" >&2
	exit 1
fi
# soak.mjs stops itself within SOAK_BUDGET_S (+30 s); timeout is the last
# resort should node itself hang.
budget=${SOAK_BUDGET_S:-420}
exec env SG_BUILD="$build" SG_START="${SG_START:-binpath}" SG_USER="$user" \
	timeout -k 10 $((budget + 90)) node "$here/soak.mjs" "$n"
