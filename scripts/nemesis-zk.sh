#!/usr/bin/env bash
# A --nemesis command for a three-server ZooKeeper ensemble on this machine:
#
#   fencebench ... --lease "$FB_ZK_ENSEMBLE" --faults nemesis \
#       --nemesis exec:scripts/nemesis-zk.sh --nemesis-names leader-kill,leader-stop
#
# called as `nemesis-zk.sh start|heal NAME`. The servers are the
# directories in $FB_ZK_MEMBERS (DIR,DIR,... as scripts/servers.sh start
# zk-ensemble sets it, or a test): each holds `port` (its client port on
# 127.0.0.1), `run` (the command that starts it on its data and myid) and
# `pid`. The leader is the server whose `srvr` (a four-letter word its
# configuration allows) says "Mode: leader". The faults:
#
#   leader-kill   SIGKILL the leader; heal: start it again from its `run`,
#                 so it rejoins the ensemble (as a follower, most often).
#   leader-stop   SIGSTOP the leader; heal: SIGCONT.
#
# No server says it leads (an election under way, or a stopped one):
# nothing is done, exit 0. A start that struck says which server on stdout,
# and appends "NAME DIR" to $FB_NEMESIS_LOG when that is set.
source "$(dirname "$0")/nemesis-members.sh"

ask_leader() { # DIR: true when that server says it leads
	timeout 1 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" && printf srvr >&3 && cat <&3' \
		"$(cat "$1/port")" 2>/dev/null | grep -q '^Mode: leader'
}

nemesis_main zk "${FB_ZK_MEMBERS:-}" "$@"
