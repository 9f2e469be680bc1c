#!/bin/sh
# Install what building and testing sandgate needs, and only what is
# missing: on a fresh Debian 12 machine `make test` and `make run` are the
# whole set-up. Node and npm come with the machine: never apt-get them.
set -eu
pkgs="build-essential pkg-config libfcgi-dev libcurl4-openssl-dev libjansson-dev
libconfig-dev libsqlite3-dev libcmocka-dev libssl-dev libseccomp-dev lighttpd
bubblewrap slirp4netns nftables iproute2 python3 python3-matplotlib
python3-ipython python3-pandas curl
valgrind sqlite3 procps nginx apache2 libapache2-mod-fcgid
postgresql libpq-dev postgresql-client"
# `make fuzz` also needs clang and libFuzzer: install-deps.sh fuzz;
# `make bench` wrk, hyperfine and GNU time: install-deps.sh bench
[ "${1:-}" = fuzz ] && pkgs="$pkgs clang libclang-rt-14-dev"
[ "${1:-}" = bench ] && pkgs="$pkgs wrk hyperfine time"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "install-deps: installing$missing"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	# Debian starts each web server it installs on port 80, and the
	# packaged PostgreSQL cluster (15 main) on 5432; the tests start their
	# own, the web servers on loopback, PostgreSQL in a directory of their
	# own with no TCP (tests/pg, which runs the newest
	# /usr/lib/postgresql/*/bin itself: nothing of ours uses the packaged
	# cluster, pg_wrapper or /var/run/postgresql). A policy-rc.d of our own
	# (only when there is none) keeps the packaged services from starting.
	policy=""
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
		$sudo chmod 755 /usr/sbin/policy-rc.d
		policy=1
	fi
	rc=0
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
	    --no-install-recommends $missing || rc=$?
	if [ -n "$policy" ]; then
		$sudo rm -f /usr/sbin/policy-rc.d
	fi
	[ "$rc" -eq 0 ] || exit "$rc"
	if command -v systemctl >/dev/null 2>&1; then
		for s in lighttpd nginx apache2 postgresql; do
			$sudo systemctl disable --now "$s" >/dev/null 2>&1 || true
		done
	fi
fi
# slirp4netns (internet for local sandboxes) runs as each sandbox's uid and
# opens /dev/net/tun: Debian's udev rules make it 0666; a machine without
# udev leaves it 0600.
if [ -c /dev/net/tun ] && [ "$(stat -c %a /dev/net/tun)" = 600 ] &&
    [ "$(id -u)" -eq 0 ]; then
	chmod 0666 /dev/net/tun
fi
# The integration tests' npm packages (openai, ajv, the AI SDK, the Agents
# SDK, zod), pinned by the lockfile: npm ci when any package.json
# dependency is missing from node_modules or is not at its pinned version.
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
