#!/bin/sh
# What verification costs: the same run checked and with --no-check, side by
# side, alternated, rounds of each, medians.
#
#   scripts/verify-cost.sh [BIN...]     each binary (default ./fencebench, built
#                                       first with make) at each thread count
#
# Each round runs, for every thread count and every binary in turn,
#   BIN -t N -d D ARGS                              (checked: the checker, the witness)
#   BIN -t N -d D ARGS --no-check --sample 1048576  (neither, nor the latency sampling)
# and prints both rates; the table at the end gives each one's median and range,
# the cost (1 - checked / unchecked, of the medians) and the median of the
# rounds' own costs, with their quartiles. Two binaries (a tree before and after
# a change) are measured in the same rounds, so a noisy machine moves both; a
# second table then gives each later binary's checked rate over the first's,
# round by round (their runs a few seconds apart): the median ratio and its
# quartiles, steadier on a noisy machine than the difference of two costs.
#
# VC_THREADS  thread counts (default "1 2")
# VC_ROUNDS   rounds (default 5)
# VC_D        each run's duration (default 3s)
# VC_ARGS     the rest of each run's options (default "--pause-rate 0 --no-floor")
#
# Bad settings: one line, exit 2; so is an option in VC_ARGS that the script
# sets itself (a second --no-check would make both runs unchecked and the
# cost a meaningless 0), and a run that refuses its options (exit 2). A run
# that fails otherwise or prints no rate: its output, exit 3.
set -eu
threads=${VC_THREADS:-1 2}
rounds=${VC_ROUNDS:-5}
d=${VC_D:-3s}
args=${VC_ARGS:---pause-rate 0 --no-floor}

case "$rounds" in
'' | *[!0-9]* | 0)
	echo "verify-cost: VC_ROUNDS: '$rounds' is not a count of rounds (1 or more)" >&2
	exit 2
	;;
esac
for t in $threads; do
	case "$t" in
	'' | *[!0-9]* | 0)
		echo "verify-cost: VC_THREADS: '$t' is not a thread count (1 or more)" >&2
		exit 2
		;;
	esac
done
[ -n "$threads" ] || {
	echo "verify-cost: VC_THREADS: empty: give one thread count or more" >&2
	exit 2
}
for a in $args; do
	case "$a" in
	-t | -t?* | --threads | --threads=* | -d | -d?* | --duration | --duration=* | \
		--no-check | --sample | --sample=* | -q | --quiet | -o | -o?* | --results-dir | \
		--results-dir=*)
		echo "verify-cost: VC_ARGS: '$a' is the script's own to set; leave it out" >&2
		exit 2
		;;
	esac
done
if [ $# -eq 0 ]; then
	make -s all
	set -- ./fencebench
fi
for b in "$@"; do
	[ -x "$b" ] || {
		echo "verify-cost: $b: not an executable" >&2
		exit 2
	}
done

w=6 # the binaries' column
for b in "$@"; do
	[ "${#b}" -le "$w" ] || w=${#b}
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# rate BIN T [OPTION...]: one run's cycles a second, from its "ops ... ops/s" line
rate() {
	b=$1
	t=$2
	shift 2
	rc=0
	# shellcheck disable=SC2086 # VC_ARGS is a list of options
	"$b" -t "$t" -d "$d" $args "$@" -q -o "$tmp" > "$tmp/out" 2>&1 || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "verify-cost: $b -t $t -d $d $args $* failed (exit $rc):" >&2
		cat "$tmp/out" >&2
		[ "$rc" -eq 2 ] && exit 2 # its options: a bad setting
		exit 3
	fi
	r=$(sed -n 's/^ops .*: \([0-9,]*\) ops\/s.*/\1/p' "$tmp/out" | tr -d ,)
	if [ -z "$r" ]; then
		echo "verify-cost: $b -t $t printed no ops/s line:" >&2
		cat "$tmp/out" >&2
		exit 3
	fi
	echo "$r"
}

echo "verify-cost: $rounds rounds of -d $d, $args; checked, then --no-check --sample 1048576"
i=1
while [ "$i" -le "$rounds" ]; do
	for t in $threads; do
		n=0
		for b in "$@"; do
			c=$(rate "$b" "$t")
			u=$(rate "$b" "$t" --no-check --sample 1048576)
			echo "$i $t $n $c $u" >> "$tmp/rates"
			printf 'round %d  -t %-3s %-*s  checked %6.3f  unchecked %6.3f M/s\n' \
				"$i" "$t" "$w" "$b" "$(echo "$c" | awk '{print $1 / 1e6}')" \
				"$(echo "$u" | awk '{print $1 / 1e6}')"
			n=$((n + 1))
		done
	done
	i=$((i + 1))
done

echo
printf '%-8s %-*s  %-22s %-22s %6s  %s\n' threads "$w" binary "checked M/s (range)" \
	"unchecked M/s (range)" cost "a round's cost: median (q1..q3)"
for t in $threads; do
	n=0
	for b in "$@"; do
		awk -v t="$t" -v n="$n" '$2 == t && $3 == n { print $4, $5 }' "$tmp/rates" |
			awk -v t="$t" -v b="$b" -v w="$w" '
			function sort(a, k,   i, j, x) {
				for (i = 2; i <= k; i++) {
					x = a[i]
					for (j = i - 1; j >= 1 && a[j] > x; j--)
						a[j + 1] = a[j]
					a[j + 1] = x
				}
			}
			function med(a, k) { return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
			function q(a, k, p,   i) { i = int(p * (k - 1) + 1.5); return a[i] }
			{ k++; c[k] = $1; u[k] = $2; r[k] = 100 * (1 - $1 / $2) }
			END {
				sort(c, k); sort(u, k); sort(r, k)
				mc = med(c, k); mu = med(u, k)
				cs = sprintf("%.3f (%.3f-%.3f)", mc / 1e6, c[1] / 1e6, c[k] / 1e6)
				us = sprintf("%.3f (%.3f-%.3f)", mu / 1e6, u[1] / 1e6, u[k] / 1e6)
				printf "%-8s %-*s  %-22s %-22s %5.1f%%  %.1f%% (%.1f..%.1f)\n", t, w, b, cs, us,
					100 * (1 - mc / mu), med(r, k), q(r, k, 0.25), q(r, k, 0.75)
			}'
		n=$((n + 1))
	done
done

[ "$#" -ge 2 ] || exit 0
echo
printf '%-8s %-*s  %s\n' threads "$w" binary "checked / the first binary's, a round's: median (q1..q3)"
for t in $threads; do
	n=0
	for b in "$@"; do
		[ "$n" -gt 0 ] &&
			awk -v t="$t" -v n="$n" '
				$2 == t && $3 == 0 { a[$1] = $4 }
				$2 == t && $3 == n { b[$1] = $4 }
				END { for (i in b) if (a[i] > 0) print b[i] / a[i] }' "$tmp/rates" |
			sort -g | awk -v t="$t" -v b="$b" -v w="$w" '
				function q(p,   i) { i = int(p * (k - 1) + 1.5); return r[i] }
				{ r[++k] = $1 }
				END {
					if (!k) exit
					m = k % 2 ? r[(k + 1) / 2] : (r[k / 2] + r[k / 2 + 1]) / 2
					printf "%-8s %-*s  %.3f (%.3f..%.3f)\n", t, w, b, m, q(0.25), q(0.75)
				}'
		n=$((n + 1))
	done
done
