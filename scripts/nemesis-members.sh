# shellcheck shell=bash
# What scripts/nemesis-etcd.sh and nemesis-zk.sh share: a cluster's members
# as directories (port, run, pid), the leader found by the caller's
# ask_leader DIR, and the two faults. Sourced, not run.
set -euo pipefail

say() { printf 'nemesis-%s: %s\n' "$service" "$*" >&2; }

# The leader's directory, or nothing: each member asked once, 1 s at most.
leader() {
	local d
	for d in ${members//,/ }; do
		kill -0 "$(cat "$d/pid")" 2>/dev/null || continue
		if ask_leader "$d"; then
			echo "$d"
			return
		fi
	done
}

nemesis_main() { # service members verb name
	service=$1 members=$2
	local verb=${3:-} name=${4:-} d
	local state=${FB_NEMESIS_STATE:-${TMPDIR:-/tmp}/fencebench-nemesis-$service.$(id -u)}.$name
	[ -n "$members" ] || {
		say "FB_$(tr a-z A-Z <<<"$service")_MEMBERS is not set (DIR,DIR,DIR: eval \"\$(scripts/servers.sh start ...)\")"
		exit 2
	}
	case $verb:$name in
	start:leader-kill | start:leader-stop)
		d=$(leader)
		[ -n "$d" ] || exit 0 # an election under way: nothing to strike
		echo "$d" >"$state"
		if [ "$name" = leader-kill ]; then
			kill -KILL "$(cat "$d/pid")"
		else
			kill -STOP "$(cat "$d/pid")"
		fi
		echo "$name: $(basename "$d") (pid $(cat "$d/pid"))"
		# a record of each strike, for whoever wants to count them (a test)
		[ -z "${FB_NEMESIS_LOG:-}" ] || echo "$name $d" >>"$FB_NEMESIS_LOG"
		;;
	heal:leader-kill)
		[ -f "$state" ] || exit 0
		d=$(cat "$state")
		rm -f "$state"
		# the same command, the same data: it rejoins
		setsid sh "$d/run" >>"$d/log" 2>&1 </dev/null &
		echo $! >"$d/pid"
		;;
	heal:leader-stop)
		[ -f "$state" ] || exit 0
		d=$(cat "$state")
		rm -f "$state"
		kill -CONT "$(cat "$d/pid")" 2>/dev/null || true
		;;
	*)
		say "usage: nemesis-$service.sh start|heal leader-kill|leader-stop (not '$verb $name')"
		exit 2
		;;
	esac
}
