#!/bin/sh
# Install what serving, building and testing sandgate need, and only what
# is missing: on a fresh Debian 12 machine `make run` and `make test` are
# the whole set-up. Node and npm come with the machine: never apt-get them.
#   install-deps.sh serve   what `make run` needs: the compiler and the
#                           -dev libraries it builds with, lighttpd, and
#                           the local sandbox (bubblewrap, Python with
#                           IPython, matplotlib and pandas for the kernel)
#   install-deps.sh [test]  that, and what `make test` needs besides (the
#                           other web servers, PostgreSQL, valgrind,
#                           chromium, ... and the integration tests' npm
#                           packages)
#   install-deps.sh fuzz    test's, and clang with libFuzzer (`make fuzz`)
#   install-deps.sh bench   test's, and wrk, hyperfine and GNU time
# It starts and stops nothing. A service a package it installs brings
# (Debian starts each web server on port 80, PostgreSQL's packaged
# cluster on 5432) is kept from starting by a policy-rc.d of ours during
# the install, then disabled so that it does not start at boot either:
# only such a service, new in this very run. One that was there before is
# left as it was, running or not. (The tests start their own web servers
# on loopback and PostgreSQL in a directory of their own: nothing of ours
# uses the packaged ones.)
# For its own test: SG_DEPS_UNIT_DIRS (where systemd units are looked
# for) and SG_DEPS_POLICY_RC (the policy-rc.d path).
set -eu
serve="build-essential pkg-config libfcgi-dev libcurl4-openssl-dev libjansson-dev
libconfig-dev libsqlite3-dev libssl-dev libseccomp-dev libpq-dev lighttpd
bubblewrap python3 python3-ipython python3-matplotlib python3-pandas"
test="libcmocka-dev slirp4netns nftables iproute2 curl jq valgrind sqlite3 procps
nginx apache2 libapache2-mod-fcgid postgresql postgresql-client lintian mandoc
chromium"
mode=${1:-test}
case $mode in
serve)	pkgs=$serve ;;
test)	pkgs="$serve $test" ;;
fuzz)	pkgs="$serve $test clang libclang-rt-14-dev" ;;
bench)	pkgs="$serve $test wrk hyperfine time" ;;
*)	echo "usage: install-deps.sh [serve|test|fuzz|bench]" >&2
	exit 2 ;;
esac
services="lighttpd nginx apache2 postgresql"
unit_dirs=${SG_DEPS_UNIT_DIRS:-/etc/systemd/system /lib/systemd/system /usr/lib/systemd/system}
policy_rc=${SG_DEPS_POLICY_RC:-/usr/sbin/policy-rc.d}

has_unit() {
	for d in $unit_dirs; do
		[ -e "$d/$1.service" ] && return 0
	done
	return 1
}

missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "install-deps: installing$missing"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	before=""
	for s in $services; do
		has_unit "$s" && before="$before $s"
	done
	$sudo apt-get update -qq
	# Our own policy-rc.d, only when there is none.
	policy=""
	if [ ! -e "$policy_rc" ]; then
		printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy_rc" >/dev/null
		$sudo chmod 755 "$policy_rc"
		policy=1
	fi
	rc=0
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
	    --no-install-recommends $missing || rc=$?
	if [ -n "$policy" ]; then
		$sudo rm -f "$policy_rc"
	fi
	[ "$rc" -eq 0 ] || exit "$rc"
	for s in $services; do
		case " $before " in
		*" $s "*) continue ;;
		esac
		if has_unit "$s" && command -v systemctl >/dev/null 2>&1; then
			echo "install-deps: $s.service is new: disabled"
			$sudo systemctl disable --now "$s" >/dev/null 2>&1 || true
		fi
	done
fi
[ "$mode" = serve ] && exit 0
# slirp4netns (internet for local sandboxes, which the tests use) runs as
# each sandbox's uid and opens /dev/net/tun: Debian's udev rules make it
# 0666; a machine without udev leaves it 0600.
if [ -c /dev/net/tun ] && [ "$(stat -c %a /dev/net/tun)" = 600 ] &&
    [ "$(id -u)" -eq 0 ]; then
	chmod 0666 /dev/net/tun
fi
# The integration tests' npm packages (openai, ajv, the AI SDK, the Agents
# SDK, zod, and puppeteer-core, which drives Debian's chromium for the
# console's browser tests), pinned by the lockfile: npm ci when any
# package.json dependency is missing from node_modules or is not at its
# pinned version.
dir=$(cd "$(dirname "$0")/integration" && pwd)
if [ -f "$dir/package-lock.json" ] && ! node -e '
const fs = require("fs"), dir = process.argv[1];
const deps = JSON.parse(fs.readFileSync(dir + "/package.json", "utf8")).dependencies || {};
for (const [name, want] of Object.entries(deps)) {
	let got = null;
	try {
		got = JSON.parse(fs.readFileSync(`${dir}/node_modules/${name}/package.json`, "utf8")).version;
	} catch (e) { /* missing */ }
	if (got !== want) {
		console.log(`install-deps: npm package ${name} is ${got ?? "missing"}, pinned ${want}`);
		process.exit(1);
	}
}' "$dir"; then
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
fi
