#!/bin/sh
# fencebench beside redis-benchmark on one Redis server: the commands a second
# each sends with fencebench's own four scripts (acquire, read, write, release).
#
#   scripts/redis-bench.sh [PORT]    a redis-server on 127.0.0.1:PORT (default 6379)
#
# 1. fencebench -t 16 -k 1024 --pause-rate 0, Redis lease and store: its cycles
#    a second, and the EVALSHA calls a second the server counted for it
#    (CONFIG RESETSTAT before, INFO commandstats after);
# 2. the scripts' SHAs as fencebench loaded them: MONITOR during a short run
#    shows each EVALSHA with its keys (acquire: 3 keys, release: 1 lease key,
#    read: 1 account key, write: an account and its history);
# 3. redis-benchmark -c 16 -r 1024 with each script on keys of its own (rb:*,
#    the accounts created first: the scripts refuse an unprepared record), and
#    the mix a cycle sends (1 acquire, 3 reads, 3 writes, 1 release) as one
#    rate: 8 / (1/acquire + 3/read + 3/write + 1/release).
#
# It writes fencebench's fb:* keys and its own rb:* keys (deleted at the end),
# never flushes. BIN overrides the binary (default ./fencebench, built first),
# BENCH_D the run's length (5s), BENCH_N the requests for each script (100000).
set -eu
port=${1:-6379}
bin=${BIN:-./fencebench}
d=${BENCH_D:-5s}
n=${BENCH_N:-100000}
url=redis://127.0.0.1:$port/0
cli() { redis-cli -p "$port" "$@"; }
[ -n "${BIN:-}" ] || make -s all
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cli CONFIG RESETSTAT >/dev/null
"$bin" --lease "$url" --store "$url" -t 16 -k 1024 --pause-rate 0 -d "$d" --no-floor -q \
	-o "$tmp" >"$tmp/run.txt"
secs=$(sed -n 's/^ops [0-9,]* in \([0-9.]*\)s: .*/\1/p' "$tmp/run.txt")
cycles=$(sed -n 's/^ops .*: \([0-9,]*\) ops\/s/\1/p' "$tmp/run.txt")
calls=$(cli INFO commandstats | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p')
echo "fencebench: $cycles cycles/s, $(echo "$calls / $secs" | bc) EVALSHA/s (the server's count)"

redis-cli -p "$port" MONITOR >"$tmp/monitor.txt" &  # not through cli(): $! must be redis-cli itself
mon=$!
"$bin" --lease "$url" --store "$url" -t 1 -k 16 --pause-rate 0 -d 200ms --no-floor -q \
	-o "$tmp" >/dev/null
kill "$mon"
wait "$mon" 2>/dev/null || true
sha() { sed -n "s/.*\"EVALSHA\" \"\([0-9a-f]*\)\" \"$1\" \"$2.*/\1/p" "$tmp/monitor.txt" | head -1; }
acquire=$(sha 3 fb:lease:)
release=$(sha 1 fb:lease:)
read=$(sha 1 fb:acct:)
write=$(sha 2 fb:acct:)

cli EVAL "for k = 0, 1023 do
  redis.call('HSET', 'rb:acct:' .. string.format('%012d', k), 'balance', '1000000000000',
             'last', '0', 'highest', '0', 'version', '0')
end" 0 >/dev/null
rb() {
	redis-benchmark -p "$port" -c 16 -n "$n" -r 1024 -q "$@" 2>/dev/null | tr '\r' '\n' |
		sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -1
}
a=$(rb EVALSHA "$acquire" 3 rb:lease:__rand_int__ rb:fence rb:fence:last:__rand_int__ c0.w1 10 \
	140737488355327)
r=$(rb EVALSHA "$read" 1 rb:acct:__rand_int__ 5 1)
w=$(rb EVALSHA "$write" 2 rb:acct:__rand_int__ rb:hist:__rand_int__ u set 999999999999 1 0 1)
l=$(rb EVALSHA "$release" 1 rb:lease:__rand_int__ c0.w1.f1)
mix=$(echo "scale=12; m = 8 / (1/$a + 3/$r + 3/$w + 1/$l); scale=0; m / 1" | bc)
echo "redis-benchmark -c 16: acquire $a, read $r, write $w, release $l requests/s;" \
	"a cycle's mix $mix/s"
cli --scan --pattern 'rb:*' | xargs -r -n 500 redis-cli -p "$port" UNLINK >/dev/null
