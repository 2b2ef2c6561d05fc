#!/usr/bin/env bash
# A --nemesis command for a three-member etcd cluster on this machine:
#
#   fencebench ... --lease "$FB_ETCD_CLUSTER" --faults nemesis \
#       --nemesis exec:scripts/nemesis-etcd.sh --nemesis-names leader-kill,leader-stop
#
# called as `nemesis-etcd.sh start|heal NAME`. The members are the
# directories in $FB_ETCD_MEMBERS (DIR,DIR,... as scripts/servers.sh start
# etcd-cluster sets it, or a test): each holds `port` (its client port on
# 127.0.0.1), `run` (the command that starts it on its data) and `pid`. The
# leader is the member whose own id the members' status names as leader
# (POST /v3/maintenance/status on the JSON gateway). The faults:
#
#   leader-kill   SIGKILL the leader; heal: start it again from its `run`,
#                 on the same data directory, so it rejoins the cluster.
#   leader-stop   SIGSTOP the leader; heal: SIGCONT.
#
# No member names a leader (an election under way, or a stopped one):
# nothing is done, exit 0. A start that struck says which member on stdout,
# and appends "NAME DIR" to $FB_NEMESIS_LOG when that is set.
source "$(dirname "$0")/nemesis-members.sh"

ask_leader() { # DIR: true when that member says it is the leader
	local out id leader
	out=$(curl -s -m 1 -X POST -d '{}' "http://127.0.0.1:$(cat "$1/port")/v3/maintenance/status") ||
		return 1
	id=$(sed -n 's/.*"member_id":"\([0-9]*\)".*/\1/p' <<<"$out")
	leader=$(sed -n 's/.*"leader":"\([0-9]*\)".*/\1/p' <<<"$out")
	[ -n "$id" ] && [ "$id" = "$leader" ]
}

nemesis_main etcd "${FB_ETCD_MEMBERS:-}" "$@"
