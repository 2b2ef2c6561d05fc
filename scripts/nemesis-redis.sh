#!/usr/bin/env bash
# A --nemesis command for a Redis primary behind Sentinels on this machine:
#
#   fencebench ... --faults nemesis --nemesis exec:scripts/nemesis-redis.sh \
#       --nemesis-names primary-kill
#
# called as `nemesis-redis.sh start|heal NAME`. The primary is the one the
# Sentinels in $FB_SENTINELS (HOST:PORT,... as scripts/servers.sh start sentinel
# sets it; master name $FB_SENTINEL_MASTER, default fb) name now; its PID, and
# its replicas', are what each server's INFO says (so the servers must run on
# this machine). The faults:
#
#   primary-kill   the primary dies before it replicates: its replicas are
#                  SIGSTOPped, its links to them cut (CLIENT KILL TYPE replica),
#                  $FB_UNREPLICATED seconds (default 0.3) of writes it holds
#                  alone, then SIGKILL, and the replicas SIGCONTed: the Sentinels
#                  promote one, and what the primary granted meanwhile is lost.
#                  Once: a primary with no replica left to promote is spared.
#   primary-stop   the primary is SIGSTOPped (its Sentinels may fail it over
#                  meanwhile); heal: SIGCONT.
#   failover       a failover forced through the first Sentinel that answers
#                  (SENTINEL FAILOVER: a replica promoted without waiting for
#                  the primary to fail, the old primary made its replica);
#                  nothing to heal.
#   replica-stop   the primary's replicas are SIGSTOPped (the primary goes on
#                  alone, granting what no replica has); heal: SIGCONT.
#
# Nothing to do (no primary answers, no replica) is not a failure: exit 0.
set -euo pipefail

verb=${1:-} name=${2:-}
master=${FB_SENTINEL_MASTER:-fb}
state=${FB_NEMESIS_STATE:-${TMPDIR:-/tmp}/fencebench-nemesis-redis.$(id -u)}

say() { printf 'nemesis-redis.sh: %s\n' "$*" >&2; }

[ -n "${FB_SENTINELS:-}" ] || {
	say "FB_SENTINELS is not set (HOST:PORT,...: eval \"\$(scripts/servers.sh start sentinel)\")"
	exit 2
}

# HOST PORT of the master the first Sentinel that answers names.
primary() {
	local s
	for s in ${FB_SENTINELS//,/ }; do
		local a
		a=$(redis-cli -h "${s%:*}" -p "${s##*:}" SENTINEL get-master-addr-by-name "$master" \
			2>/dev/null | tr '\n' ' ') || continue
		[ -z "${a// /}" ] || {
			echo "$a"
			return
		}
	done
}

# field $3 of `INFO $4` on HOST $1 PORT $2
info() { redis-cli -h "$1" -p "$2" INFO "$4" 2>/dev/null | tr -d "\r" | sed -n "s/^$3://p" || true; }

# the PIDs of the replicas of the primary at HOST $1 PORT $2, one a line
replica_pids() {
	local r rport rhost
	for r in $(info "$1" "$2" 'slave[0-9]*' replication); do # ip=..,port=..,...
		rport=$(echo "$r" | sed -n 's/.*port=\([0-9]*\).*/\1/p')
		rhost=$(echo "$r" | sed -n 's/.*ip=\([^,]*\).*/\1/p')
		info "$rhost" "$rport" process_id server
	done
}

case $verb:$name in
start:primary-kill)
	read -r host port <<<"$(primary)" || exit 0
	pid=$(info "$host" "$port" process_id server)
	[ -n "$pid" ] || exit 0 # the named primary is gone: a failover under way
	mapfile -t replicas < <(replica_pids "$host" "$port" | grep .)
	[ "${#replicas[@]}" -gt 0 ] || exit 0 # nothing to promote: spared
	kill -STOP "${replicas[@]}"
	redis-cli -h "$host" -p "$port" CLIENT KILL TYPE replica >/dev/null || true
	sleep "${FB_UNREPLICATED:-0.3}" # what the primary grants now, it holds alone
	kill -KILL "$pid"
	kill -CONT "${replicas[@]}"
	;;
start:primary-stop)
	read -r host port <<<"$(primary)" || exit 0
	pid=$(info "$host" "$port" process_id server)
	[ -n "$pid" ] || exit 0
	echo "$pid" >"$state"
	kill -STOP "$pid"
	;;
heal:primary-stop)
	[ -f "$state" ] || exit 0
	kill -CONT "$(cat "$state")" 2>/dev/null || true
	rm -f "$state"
	;;
start:failover)
	for s in ${FB_SENTINELS//,/ }; do
		# refused while one is under way, or with no replica to promote:
		# nothing to do, as for the other faults
		if redis-cli -h "${s%:*}" -p "${s##*:}" SENTINEL FAILOVER "$master" 2>/dev/null |
			grep -q '^OK'; then
			break
		fi
	done
	;;
start:replica-stop)
	read -r host port <<<"$(primary)" || exit 0
	replica_pids "$host" "$port" | grep . >"$state.replicas" || true
	# shellcheck disable=SC2046
	[ ! -s "$state.replicas" ] || kill -STOP $(cat "$state.replicas")
	;;
heal:replica-stop)
	[ -f "$state.replicas" ] || exit 0
	# shellcheck disable=SC2046
	[ ! -s "$state.replicas" ] || kill -CONT $(cat "$state.replicas") 2>/dev/null || true
	rm -f "$state.replicas"
	;;
heal:primary-kill | heal:failover) ;; # nothing comes back: the failover is the fault
*)
	say "usage: nemesis-redis.sh start|heal primary-kill|primary-stop|failover|replica-stop (not '$verb $name')"
	exit 2
	;;
esac
