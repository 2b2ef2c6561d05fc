#!/bin/sh
# Install what building and testing fencebench needs, or say exactly how.
# Debian package names; pkg-config finds each library afterwards.
set -e
PKGS="build-essential pkg-config libjemalloc-dev libcmocka-dev libjson-c-dev libhiredis-dev libpq-dev libcurl4-openssl-dev libzookeeper-st-dev help2man"
missing=""
command -v cc >/dev/null 2>&1 || missing="$missing build-essential"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
command -v help2man >/dev/null 2>&1 || missing="$missing help2man"
for p in jemalloc:libjemalloc-dev cmocka:libcmocka-dev json-c:libjson-c-dev \
	hiredis:libhiredis-dev libpq:libpq-dev libcurl:libcurl4-openssl-dev; do
	pc=${p%%:*}
	deb=${p#*:}
	pkg-config --exists "$pc" 2>/dev/null || missing="$missing $deb"
done
# The ZooKeeper C client has no .pc file. The single-threaded build (its
# I/O runs only when the caller drives it); -mt-dev conflicts with it.
[ -f /usr/include/zookeeper/zookeeper.h ] || missing="$missing libzookeeper-st-dev"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "fencebench: installing build dependencies:$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >&2
	exit 0
fi
echo "fencebench: missing build dependencies:$missing" >&2
echo "install them with:  sudo apt-get install -y $PKGS" >&2
exit 1
