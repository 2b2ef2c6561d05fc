#!/bin/sh
# The contention sweeps, their text tables, JSON documents and charts.
#
#   scripts/sweeps.sh reference [DIR]   this machine's reference sweeps (default
#                                       results/reference, committed): threads 1..64
#                                       by fence source, 16 threads by pause rate,
#                                       2 and 8 threads by key distribution, and one
#                                       run of 64 threads for 10 s (its time series)
#   scripts/sweeps.sh many-core [DIR]   the many-core sweep (default build/many-core):
#                                       1..16 threads, per-key against global, uniform
#                                       against zipf, faults off; about 70 s
#
# Each sweep writes NAME.txt (what the terminal showed), NAME.json and, with
# gnuplot installed, NAME-*.svg beside them (fencebench plot). Run from the
# project root;
# BIN overrides the binary (default ./fencebench, built first with make);
# SWEEP_D each point's duration (default 2s; CI runs the many-core sweep at 200ms).
set -eu
what=${1:-}
bin=${BIN:-./fencebench}
d=${SWEEP_D:-2s}
case "$what" in
reference) out=${2:-results/reference} ;;
many-core) out=${2:-build/many-core} ;;
*)
	echo "usage: scripts/sweeps.sh reference|many-core [DIR]" >&2
	exit 2
	;;
esac
[ -n "${BIN:-}" ] || make -s all
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# sweep NAME OPTION...: one sweep (or run) into $out/NAME.{txt,json} and its charts
sweep() {
	name=$1
	shift
	echo "== $name: $bin $*" >&2
	"$bin" "$@" -q -o "$tmp" --json "$out/$name.json" > "$out/$name.txt"
	if command -v gnuplot > /dev/null; then
		"$bin" plot "$out/$name.json" > /dev/null
	fi
	cat "$out/$name.txt"
}

if [ "$what" = reference ]; then
	sweep threads -t 1,2,4,8,16,32,64 --fence global,per-key --pause-rate 0 -d "$d"
	sweep pause-rate -t 16 --pause-rate 0,10,50,100,200 -d "$d"
	sweep dist -t 2,8 --fence global,per-key --dist uniform,zipf:1.2,partitioned \
		--pause-rate 0 -d "${SWEEP_D:-1s}"
	sweep run -t 64 -d 10s
else
	nproc=$(getconf _NPROCESSORS_ONLN)
	sweep many-core -t 1,2,4,8,12,16 --fence per-key,global --dist uniform,zipf:1.2 \
		--op debit --mode fenced --pause-rate 0 -d "$d"
	echo "many-core: $nproc CPUs online: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
fi
