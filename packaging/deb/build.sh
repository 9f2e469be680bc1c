#!/bin/sh
# Build the sandgate Debian package into OUTDIR (default: build/deb-out):
#   sh packaging/deb/build.sh [OUTDIR]
# Compiles with Debian's hardening flags into build/deb (B=build/deb), runs
# `make install` into a staged tree with PREFIX=/usr (so the binaries find
# the kernel at /usr/bin/../share/sandgate/kernel), moves the samples where
# Debian wants them and calls dpkg-deb --root-owner-group. Needs: make, cc,
# the -dev libraries of tests/install-deps.sh, dpkg-dev (dpkg-shlibdeps,
# dpkg-buildflags), binutils (strip); lintian to check the result.
#
# Version: the tag nearest HEAD if it is vX.Y.Z (-> X.Y.Z[+gitN.SHA]);
# without a tag, packaging/deb/VERSION followed by ~gitDATE.N.SHA (commit
# date, commits since the root), so that the release X.Y.Z sorts above it.
# The Debian revision is -1. SANDGATE_DEB_VERSION overrides all of it.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${1:-$top/build/deb-out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
B=build/deb
cd "$top"

version() {
	if [ -n "${SANDGATE_DEB_VERSION:-}" ]; then
		echo "$SANDGATE_DEB_VERSION"
		return
	fi
	if d=$(git describe --tags --match 'v[0-9]*' 2>/dev/null); then
		# v1.2.3 or v1.2.3-4-gabcdef0
		echo "$d" | sed -E 's/^v//; s/-([0-9]+)-g([0-9a-f]+)$/+git\1.\2/; s/$/-1/'
		return
	fi
	base=$(cat "$here/VERSION")
	if git rev-parse --git-dir >/dev/null 2>&1; then
		n=$(git rev-list --count HEAD)
		sha=$(git rev-parse --short=7 HEAD)
		date=$(TZ=UTC git log -1 --date=format-local:%Y%m%d --format=%cd)
		echo "${base}~git${date}.${n}.${sha}-1"
	else
		echo "${base}-1"
	fi
}
VERSION=$(version)
ARCH=$(dpkg --print-architecture)

# 1. Compile with Debian's build flags (hardening: PIE, relro, bindnow,
# fortify, stack protector); -Werror stays on.
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
CFLAGS="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
LDFLAGS=$(dpkg-buildflags --get LDFLAGS)
# make does not rebuild on changed flags: start over when they change.
flags="$CFLAGS | $LDFLAGS"
if [ "$(cat $B/.flags 2>/dev/null)" != "$flags" ]; then
	rm -rf $B
	mkdir -p $B
	printf '%s\n' "$flags" > $B/.flags
fi
make -s -j"$(nproc)"  B=$B CFLAGS="$CFLAGS" LDFLAGS="$LDFLAGS" all

# 2. Stage: make install, then rearranged.
stage=$(mktemp -d "${TMPDIR:-/tmp}/sandgate-deb.XXXXXX")
trap 'rm -rf "$stage"' EXIT INT TERM
root=$stage/root
make -s B=$B CFLAGS="$CFLAGS" LDFLAGS="$LDFLAGS" PREFIX=/usr DESTDIR="$root" install
for b in sandgate sandgate-fcgi; do
	strip --strip-unneeded --remove-section=.comment --remove-section=.note \
	    "$root/usr/bin/$b"
done
doc=$root/usr/share/doc/sandgate
install -d -m 0755 "$doc/examples" "$root/etc/sandgate" "$root/lib/systemd/system"
# The samples make install puts in share/sandgate: the config becomes the
# conffile, the web-server ones examples (with the installed paths).
rm -f "$root/usr/share/sandgate/sandgate.conf" "$root/usr/share/sandgate/lighttpd.conf.example"
sed -e 's,/usr/local/bin/,/usr/bin/,g' lighttpd.conf.example > "$doc/examples/lighttpd.conf.example"
for f in nginx.conf.example apache.conf.example; do
	sed -e 's,/usr/local/bin/,/usr/bin/,g' "etc/$f" > "$doc/examples/$f"
done
chmod 0644 "$doc"/examples/*
# Shared hosting runs from the user's own copy, not the package: the
# samples are examples too.
rm -rf "$root/usr/share/sandgate/shared-hosting"
install -d -m 0755 "$doc/examples/shared-hosting"
install -m 0644 etc/shared-hosting/.htaccess etc/shared-hosting/sandgate.conf \
    etc/shared-hosting/sandgate.fcgi "$doc/examples/shared-hosting/"
# The conffile: responders (and the --listen socket) belong to the
# package's own user; the web server's group may connect to the socket.
sed -e 's,^# /etc/sandgate/sandgate.conf and check it,# /etc/sandgate/sandgate.conf (done by the Debian package); check it,' \
    -e 's,user = "www-data";\( *\)# responders drop,user = "sandgate";\1# responders drop,' \
    -e 's,socket_owner = "www-data:www-data";,socket_owner = "sandgate:www-data";,' \
    etc/sandgate.conf > "$root/etc/sandgate/sandgate.conf"
grep -q '^  user = "sandgate";' "$root/etc/sandgate/sandgate.conf"
grep -q 'socket_owner = "sandgate:www-data";' "$root/etc/sandgate/sandgate.conf"
grep -q 'path = "/var/lib/sandgate/sandgate.db"' "$root/etc/sandgate/sandgate.conf"
chmod 0644 "$root/etc/sandgate/sandgate.conf"   # postinst: root:sandgate 0640
sed -e 's,/usr/local/bin/,/usr/bin/,g' \
    -e 's,^Description=.*,&\nDocumentation=man:sandgate-fcgi(8) man:sandgate.conf(5) file:///usr/share/doc/sandgate/README.md.gz,' \
    etc/sandgate.service > "$root/lib/systemd/system/sandgate.service"
grep -q '^ExecStart=/usr/bin/sandgate-fcgi ' "$root/lib/systemd/system/sandgate.service"
chmod 0644 "$root/lib/systemd/system/sandgate.service"
# The man pages make install put in share/man, compressed as policy wants.
gzip -9n "$root"/usr/share/man/man1/sandgate.1 "$root"/usr/share/man/man5/sandgate.conf.5 \
    "$root"/usr/share/man/man8/sandgate-fcgi.8
install -m 0644 "$here/copyright" "$doc/copyright"
install -d -m 0755 "$root/usr/share/lintian/overrides"
install -m 0644 "$here/lintian-overrides" "$root/usr/share/lintian/overrides/sandgate"
# The README and the docs it links to, beside it as in the source tree.
gzip -9n -c README.md > "$doc/README.md.gz"
install -d -m 0755 "$doc/docs"
for f in docs/*.md; do
	gzip -9n -c "$f" > "$doc/docs/$(basename "$f").gz"
done
maint=$(sed -n 's/^Maintainer: //p' "$here/maintainer" 2>/dev/null || true)
maint=${maint:-sandgate maintainers <maintainers@sandgate.invalid>}
date=$(TZ=UTC git log -1 --format=%cd --date=format-local:'%a, %d %b %Y %H:%M:%S +0000' 2>/dev/null ||
    date -u -R)
cat > "$stage/changelog" <<CL
sandgate ($VERSION) unstable; urgency=medium

  * Package built from $(git rev-parse --short=12 HEAD 2>/dev/null || echo "a source tree")
    by packaging/deb/build.sh.

 -- $maint  $date
CL
gzip -9n -c "$stage/changelog" > "$doc/changelog.Debian.gz"
find "$root" -type d -exec chmod 0755 {} +
find "$root/usr/share" -type f -exec chmod 0644 {} +

# 3. Control files. Depends from the libraries actually linked.
mkdir -p "$root/DEBIAN" "$stage/src/debian"
printf 'Source: sandgate\n\nPackage: sandgate\nArchitecture: any\n' > "$stage/src/debian/control"
shlibs=$(cd "$stage/src" && dpkg-shlibdeps -O -e"$root/usr/bin/sandgate-fcgi" \
    -e"$root/usr/bin/sandgate" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ]
size=$(du -k -s --exclude=DEBIAN "$root" | cut -f1)
sed -e "s|@VERSION@|$VERSION|" -e "s|@ARCH@|$ARCH|" -e "s|@MAINTAINER@|$maint|" \
    -e "s|@SIZE@|$size|" -e "s|@SHLIBS@|$shlibs|" "$here/control.in" > "$root/DEBIAN/control"
echo /etc/sandgate/sandgate.conf > "$root/DEBIAN/conffiles"
for s in postinst prerm postrm; do
	install -m 0755 "$here/$s" "$root/DEBIAN/$s"
done
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z |
    xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/conffiles" "$root/DEBIAN/md5sums"

# 4. The package.
deb=$out/sandgate_${VERSION#*:}_$ARCH.deb
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)} \
    dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
