#!/bin/sh
# The integration suite, twice: (1) as root, lighttpd spawning the normal
# build on fd 0 and the responders dropping to the service user; (2) the
# ASan+UBSan build started with --listen as that unprivileged user (or as
# ourselves when we are not root).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
user=${SG_USER:-sgtest}
if [ "$(id -u)" -eq 0 ] && ! id "$user" >/dev/null 2>&1; then
	useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
fi
run() {
	echo "== integration: $*"
	env "$@" node --test --test-concurrency=1 ./*.test.mjs
}
run SG_START=binpath SG_BUILD=build SG_USER="$user"
run SG_START=listen SG_BUILD=build/asan SG_USER="$user"
