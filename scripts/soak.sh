#!/bin/sh
# The soak: every fault on, many threads, a long run. Passes when no fenced
# discipline failed (exit 0 from fencebench) and the resident set stayed
# flat: the largest RSS of the second half within 10% of the first half's.
# Usage: scripts/soak.sh BINARY DURATION_SECONDS [RESULTS_DIR]
set -u
bin=$1
secs=$2
out=${3:-build/soak}
mkdir -p "$out"
"$bin" -t 64 -d "${secs}s" -q -o "$out" --faults pause,skew,delay,crash,renew,retry \
	--lease-clock realtime --crash-rate 0.5 > "$out/summary.txt" 2>&1 &
pid=$!
: > "$out/rss.txt"
# RSS once a second from /proc, from the run's first second on: a sample
# taken at once reads the process before it has set up (about 100 kB
# against 34 MB a moment later), and would fail any short soak as growth.
# The run ends on its own.
sleep 1
while kill -0 "$pid" 2>/dev/null; do
	awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null >> "$out/rss.txt"
	sleep 1
done
wait "$pid"
rc=$?
cat "$out/summary.txt"
n=$(wc -l < "$out/rss.txt")
half=$((n / 2))
first=$(head -n "$half" "$out/rss.txt" | sort -n | tail -1)
second=$(tail -n "$((n - half))" "$out/rss.txt" | sort -n | tail -1)
echo "soak: exit $rc; peak RSS first half ${first:-?} kB, second half ${second:-?} kB ($n samples)"
[ "$rc" = 0 ] || { echo "soak: FAILED: fencebench exited $rc"; exit 1; }
if [ "$half" -lt 1 ] || [ -z "$first" ] || [ -z "$second" ]; then
	echo "soak: passed; RSS not judged: fewer than two samples (run it longer)"
	exit 0
fi
if [ "$second" -gt $((first + first / 10)) ]; then
	echo "soak: FAILED: RSS grew by more than 10%"
	exit 1
fi
echo "soak: passed"
