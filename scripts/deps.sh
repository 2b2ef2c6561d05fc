#!/bin/sh
# Install what fencebench needs, or say exactly how. Debian package names.
#
#   scripts/deps.sh        the build's libraries and tools (make runs it when
#                          pkg-config misses one): exit 1 if they are missing
#                          and cannot be installed
#   scripts/deps.sh test   what the tests use: the servers they start, gnuplot
#                          and libfaketime (make test runs it first). Never
#                          fails: a test whose package is missing is skipped,
#                          and the closing line of make test counts it
#
# As root with apt-get, what is missing is installed; otherwise the one
# apt-get line that installs it is printed. To try this on a machine that
# has everything:
#   FB_DEPS_MISSING="redis-server gnuplot-nox"   treat these as missing
#   FB_DEPS_DRY_RUN=1                            print the apt-get commands, run none
set -e
mode=${1:-build}
missing=""

# need PACKAGE TEST...: PACKAGE is missing unless TEST succeeds
need() {
	pkg=$1
	shift
	case " $FB_DEPS_MISSING " in
	*" $pkg "*) missing="$missing $pkg" ;;
	*) "$@" >/dev/null 2>&1 || missing="$missing $pkg" ;;
	esac
}
# any FILE...: one of them exists (the caller's globs, expanded or not)
any() {
	for f in "$@"; do
		[ -e "$f" ] && return 0
	done
	return 1
}
# The tests' ZooKeeper is Debian's jars run by java, both from zookeeper
# (not zookeeperd: that only adds a system server on port 2181).
zk_jars() {
	command -v java && [ -f /usr/share/java/zookeeper.jar ]
}
# apt-get as the user asked: for real, or only said
apt() {
	if [ -n "$FB_DEPS_DRY_RUN" ]; then
		echo "fencebench: would run: apt-get $*" >&2
	else
		apt-get "$@" >&2
	fi
}

case $mode in
build)
	what="build dependencies"
	need build-essential command -v cc
	need pkg-config command -v pkg-config
	need help2man command -v help2man
	need libjemalloc-dev pkg-config --exists jemalloc
	need libcmocka-dev pkg-config --exists cmocka
	need libjson-c-dev pkg-config --exists json-c
	need libhiredis-dev pkg-config --exists hiredis
	need libpq-dev pkg-config --exists libpq
	need libcurl4-openssl-dev pkg-config --exists libcurl
	# The ZooKeeper C client has no .pc file. The single-threaded build (its
	# I/O runs only when the caller drives it); -mt-dev conflicts with it.
	need libzookeeper-st-dev test -f /usr/include/zookeeper/zookeeper.h
	;;
test)
	what="what the tests use"
	need redis-server command -v redis-server
	need postgresql any /usr/lib/postgresql/*/bin/initdb "$(command -v initdb)"
	need zookeeper zk_jars
	need etcd-server command -v etcd
	need libfaketime any /usr/lib/*/faketime/libfaketime.so.1
	need gnuplot-nox command -v gnuplot
	need python3 python3 -c "import sqlite3" # the reference adapters
	;;
*)
	echo "scripts/deps.sh: unknown mode '$mode' (build or test)" >&2
	exit 2
	;;
esac
[ -z "$missing" ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "fencebench: installing $what:$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	# stale or absent package lists (a fresh image has none): the install
	# below says what it could not find
	apt update -qq || echo "fencebench: apt-get update failed; trying the install" >&2
	# shellcheck disable=SC2086
	if apt install -y -qq --no-install-recommends $missing; then
		exit 0
	fi
	echo "fencebench: apt-get install failed:$missing" >&2
	[ "$mode" = test ] && exit 0
	exit 1
fi
if [ "$mode" = test ]; then
	echo "fencebench: not installed:$missing; the tests that use them are skipped" >&2
	echo "install them with:  sudo apt-get install -y$missing" >&2
	exit 0
fi
echo "fencebench: missing $what:$missing" >&2
echo "install them with:  sudo apt-get install -y$missing" >&2
exit 1
