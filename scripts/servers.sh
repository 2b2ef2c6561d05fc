#!/usr/bin/env bash
# Throwaway servers for fencebench's engines, on free 127.0.0.1 ports, each in
# a directory of its own under $FB_SERVERS_DIR (default ${TMPDIR:-/tmp}/fencebench-servers):
#
#   eval "$(scripts/servers.sh start redis postgres)"   start, and set the URLs below
#   scripts/servers.sh env                             print the URLs again
#   scripts/servers.sh stop                            stop every one (by its PID) and
#                                                      remove the directory
#
# What start can start, and the variable each sets (printed as `export` lines):
#
#   redis      FB_REDIS=redis://127.0.0.1:PORT/0
#   postgres   FB_PG=postgres://fencebench@127.0.0.1:PORT/postgres  (initdb first; as
#              root, run as the postgres user, or nobody: initdb refuses root)
#   zk         FB_ZK=zk://127.0.0.1:PORT  (tickTime 10 ms: sessions, so --ttl, from 20 ms;
#              a stock zookeeperd's 2 s tick grants 4 s at least)
#   etcd       FB_ETCD=etcd://127.0.0.1:PORT  (heartbeat 10 ms, election 50 ms: leases
#              from 1 s; etcd's defaults grant 2 s at least)
#   redlock    three redis-servers, the third under libfaketime (its wall clock offset by
#              what $FB_NODE3_FAKETIME says, "+0" at start):
#              FB_REDLOCK=redlock://N1,N2,N3?fence=incr
#              FB_REDLOCK_JUMPY=redlock://N1,N2,N3?faketime=3:FILE&fence=incr
#              FB_NODE3_FAKETIME=FILE
#   sentinel   a primary, its replica and three Sentinels watching it as master "fb"
#              (down after 300 ms), ready once every Sentinel sees the other two and
#              the replica: FB_SENTINEL='redis://S1,S2,S3/0?sentinel=fb' (for --lease),
#              FB_SENTINELS=S1,S2,S3 (for scripts/nemesis-redis.sh),
#              FB_SENTINEL_PRIMARY, FB_SENTINEL_REPLICA (HOST:PORT, at start)
#   etcd-cluster  three etcd members (heartbeat 10 ms, election 50 ms):
#              FB_ETCD_CLUSTER=etcd://A,B,C (for --lease),
#              FB_ETCD_MEMBERS=DIR1,DIR2,DIR3 (for scripts/nemesis-etcd.sh)
#   zk-ensemble   three ZooKeeper servers (tickTime 10 ms, -Xmx128m each):
#              FB_ZK_ENSEMBLE=zk://A,B,C (for --lease),
#              FB_ZK_MEMBERS=DIR1,DIR2,DIR3 (for scripts/nemesis-zk.sh)
#              Each member's DIR holds `port` (its client port), `run` (the
#              command that starts it again on the same data) and `pid`.
#
# No name: the first five. Nothing is installed or fsynced, nothing listens beyond
# 127.0.0.1. Debian packages: redis-server, postgresql, zookeeper (the jars; not
# zookeeperd, which adds a system server on 2181), etcd-server, libfaketime.
# Exit 77 when a server's binaries are missing (named on stderr), 3 when one
# does not start (its log's last lines on stderr); what started stays up
# until `stop`.
set -euo pipefail

dir=${FB_SERVERS_DIR:-${TMPDIR:-/tmp}/fencebench-servers}
envfile=$dir/env

say() { printf 'servers.sh: %s\n' "$*" >&2; }

# A port nothing listens on: random, tried by connecting to it.
free_port() {
	local p
	for _ in $(seq 200); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	say "no free port on 127.0.0.1"
	exit 3
}

# Send $2 to 127.0.0.1:$1, print the first 512 bytes of the answer.
ask() {
	timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" && printf "%b" "$1" >&3 && head -c 512 <&3' \
		"$1" "$2" 2>/dev/null || true
}

# Wait up to 60 s for `$2` (a command) to succeed; the server's PID is $1.
# Returns 1 when the server lost its port to another process (a clash: worth
# another port), exits 3 when it failed otherwise.
await() {
	local pid=$1 what=$2 log=$3 name=$4 end=$((SECONDS + 60))
	while [ "$SECONDS" -lt "$end" ]; do
		if eval "$what"; then
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			if grep -qi 'address already in use' "$log"; then
				return 1
			fi
			say "$name exited before it was ready; the end of $log:"
			tail -n 5 "$log" >&2 || true
			exit 3
		fi
		sleep 0.1
	done
	say "$name not ready within 60 s; the end of $log:"
	tail -n 5 "$log" >&2 || true
	exit 3
}

need() {
	command -v "$1" >/dev/null 2>&1 || {
		say "$1 is not installed (apt-get install -y $2)"
		exit 77
	}
}

# A server started in the background: its own session (a Ctrl-C in the shell
# that started it does not reach it), output to its log, PID recorded.
spawn() {
	local name=$1 log=$2
	shift 2
	setsid "$@" >"$log" 2>&1 </dev/null &
	echo $! >>"$dir/pids"
	echo $!
}

start_redis() { # name port [faketime-file [primary-port]]
	local name=$1 port=$2 ft=${3:-} of=${4:-} d=$dir/$1
	need redis-server redis-server
	mkdir -p "$d"
	local cmd=(redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no
		--dir "$d" --daemonize no)
	[ -z "$of" ] || cmd+=(--replicaof 127.0.0.1 "$of")
	local pid
	if [ -n "$ft" ]; then
		local lib
		lib=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -n 1)
		[ -n "$lib" ] || {
			say "libfaketime is not installed (apt-get install -y libfaketime)"
			exit 77
		}
		echo +0 >"$ft"
		# Debian's redis-server links jemalloc, whose first allocation reads the
		# clock while libfaketime is still starting, and the two deadlock: libc's
		# malloc, preloaded after libfaketime, takes the allocations instead. The
		# wall clock (key expiry) is faked, the monotonic one (timers) is not.
		pid=$(spawn "$name" "$d/log" env LD_PRELOAD="$lib libc.so.6" FAKETIME_TIMESTAMP_FILE="$ft" \
			FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1 "${cmd[@]}")
	else
		pid=$(spawn "$name" "$d/log" "${cmd[@]}")
	fi
	await "$pid" "ask $port 'PING\r\nQUIT\r\n' | grep -q PONG" "$d/log" "$name"
}

# Start $1 (a start_ function that picks its own ports) again on a port
# clash, 5 times at most.
with_retries() {
	for _ in 1 2 3 4 5; do
		if "$@"; then
			return 0
		fi
		say "$1: a port was taken meanwhile; again on another"
	done
	say "$1: five port clashes in a row"
	exit 3
}

start_postgres() {
	local port bin d
	# initdb and postgres side by side: on PATH, else Debian's newest
	bin=$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/initdb)")
	[ -x "$bin/postgres" ] || bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | tail -n 1)
	[ -n "$bin" ] && [ -x "$bin/initdb" ] && [ -x "$bin/postgres" ] || {
		say "initdb and postgres are not installed (apt-get install -y postgresql)"
		exit 77
	}
	port=$(free_port)
	# Its own directory under /tmp, linked from ours: its socket's path must
	# fit in 108 bytes, and as root the postgres user must reach it.
	d=$(mktemp -d /tmp/fb-pg-XXXXXX)
	echo "$d" >>"$dir/dirs"
	ln -sfn "$d" "$dir/postgres"
	local as=()
	if [ "$(id -u)" = 0 ]; then
		local user=postgres
		id "$user" >/dev/null 2>&1 || user=nobody
		chown "$user" "$d"
		chmod 755 "$d"
		as=(setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --clear-groups)
	fi
	"${as[@]}" "$bin/initdb" -D "$d/data" -U fencebench --auth=trust -E UTF8 --locale=C \
		--no-sync >"$d/initdb.log" 2>&1 || {
		say "initdb failed; the end of $d/initdb.log:"
		tail -n 5 "$d/initdb.log" >&2
		exit 3
	}
	local pid
	pid=$(spawn postgres "$d/log" "${as[@]}" "$bin/postgres" -D "$d/data" -p "$port" -k "$d" \
		-c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \
		-c full_page_writes=off -c max_connections=200)
	await "$pid" "grep -q 'ready to accept connections' '$d/log'" "$d/log" postgres || return 1
	echo "export FB_PG=postgres://fencebench@127.0.0.1:$port/postgres" >>"$envfile"
}

start_zk() {
	local port d=$dir/zk
	need java default-jre-headless
	[ -f /usr/share/java/zookeeper.jar ] || {
		say "/usr/share/java/zookeeper.jar is not installed (apt-get install -y zookeeper)"
		exit 77
	}
	port=$(free_port)
	mkdir -p "$d/data"
	cat >"$d/zoo.cfg" <<EOF
tickTime=10
dataDir=$d/data
clientPort=$port
clientPortAddress=127.0.0.1
minSessionTimeout=20
maxSessionTimeout=60000
admin.enableServer=false
4lw.commands.whitelist=srvr,ruok
forceSync=no
maxClientCnxns=0
EOF
	local pid
	pid=$(spawn zk "$d/log" java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
		-cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar \
		org.apache.zookeeper.server.ZooKeeperServerMain "$d/zoo.cfg")
	await "$pid" "ask $port ruok | grep -q imok" "$d/log" zookeeper || return 1
	echo "export FB_ZK=zk://127.0.0.1:$port" >>"$envfile"
}

start_etcd() {
	local port peer d=$dir/etcd
	need etcd etcd-server
	port=$(free_port)
	peer=$(free_port)
	while [ "$peer" = "$port" ]; do peer=$(free_port); done
	mkdir -p "$d"
	local pid
	pid=$(spawn etcd "$d/log" etcd --name fb --data-dir "$d/data" \
		--listen-client-urls "http://127.0.0.1:$port" \
		--advertise-client-urls "http://127.0.0.1:$port" \
		--listen-peer-urls "http://127.0.0.1:$peer" \
		--initial-advertise-peer-urls "http://127.0.0.1:$peer" \
		--initial-cluster "fb=http://127.0.0.1:$peer" --unsafe-no-fsync \
		--heartbeat-interval 10 --election-timeout 50)
	await "$pid" "ask $port 'GET /health HTTP/1.0\r\n\r\n' | grep -q '\"health\":\"true\"'" \
		"$d/log" etcd || {
		rm -rf "$d"
		return 1
	}
	echo "export FB_ETCD=etcd://127.0.0.1:$port" >>"$envfile"
}

# Start the member in directory $1 (its `run` script, which execs the
# server): its PID in $1/pid and in the list stop reads.
member_up() {
	local pid
	pid=$(spawn "$(basename "$1")" "$1/log" sh "$1/run")
	echo "$pid" >"$1/pid"
}

# Three ports, distinct, each free now.
three_ports() {
	local a b c
	a=$(free_port)
	b=$(free_port)
	while [ "$b" = "$a" ]; do b=$(free_port); done
	c=$(free_port)
	while [ "$c" = "$a" ] || [ "$c" = "$b" ]; do c=$(free_port); done
	echo "$a $b $c"
}

# Wait up to 90 s until every member in the directories $2... answers
# ready_$1 PORT. A member that lost its port: every member stopped and 1
# (another try on other ports); one that exited otherwise: exit 3.
members_ready() {
	local kind=$1 end=$((SECONDS + 90)) m ok
	shift
	while [ "$SECONDS" -lt "$end" ]; do
		ok=1
		for m in "$@"; do
			if ! kill -0 "$(cat "$m/pid")" 2>/dev/null; then
				if grep -qi 'address already in use' "$m/log"; then
					members_down "$@"
					return 1
				fi
				say "$(basename "$m") exited before it was ready; the end of $m/log:"
				tail -n 5 "$m/log" >&2 || true
				exit 3
			fi
			"ready_$kind" "$(cat "$m/port")" || ok=0
		done
		[ "$ok" = 0 ] || return 0
		sleep 0.2
	done
	say "the $kind members did not agree on a leader within 90 s; the end of $1/log:"
	tail -n 5 "$1/log" >&2 || true
	exit 3
}

members_down() {
	local m
	for m in "$@"; do
		kill -KILL "$(cat "$m/pid")" 2>/dev/null || true
		rm -rf "$m"
	done
}

ready_etcd() { ask "$1" 'GET /health HTTP/1.0\r\n\r\n' | grep -q '"health":"true"'; }
ready_zk() { ask "$1" srvr | grep -Eq 'Mode: (leader|follower)'; }

# Three etcd members, one cluster, fast timing as start_etcd's.
etcd_cluster() {
	need etcd etcd-server
	local c p i cluster="" urls="" dirs=()
	read -r -a c <<<"$(three_ports)"
	read -r -a p <<<"$(three_ports)"
	for i in 0 1 2; do
		cluster+="${cluster:+,}m$((i + 1))=http://127.0.0.1:${p[$i]}"
	done
	for i in 0 1 2; do
		local d=$dir/etcd-m$((i + 1)) u=http://127.0.0.1:${c[$i]}
		mkdir -p "$d"
		echo "${c[$i]}" >"$d/port"
		# the same command restarts it: on an existing data directory
		# etcd ignores the --initial-cluster flags and rejoins
		printf '%s\n' "exec etcd --name m$((i + 1)) --data-dir $d/data \\" \
			"  --listen-client-urls $u --advertise-client-urls $u \\" \
			"  --listen-peer-urls http://127.0.0.1:${p[$i]} \\" \
			"  --initial-advertise-peer-urls http://127.0.0.1:${p[$i]} \\" \
			"  --initial-cluster $cluster --initial-cluster-token fb \\" \
			"  --unsafe-no-fsync --heartbeat-interval 10 --election-timeout 50" >"$d/run"
		member_up "$d"
		dirs+=("$d")
		urls+="${urls:+,}127.0.0.1:${c[$i]}"
	done
	members_ready etcd "${dirs[@]}" || return 1
	{
		echo "export FB_ETCD_CLUSTER=etcd://$urls"
		echo "export FB_ETCD_MEMBERS=$(IFS=,; echo "${dirs[*]}")"
	} >>"$envfile"
}

# Three ZooKeeper servers, one ensemble, tickTime 10 ms as start_zk's; a
# follower gives up on a silent leader after syncLimit ticks (1 s).
zk_ensemble() {
	need java default-jre-headless
	[ -f /usr/share/java/zookeeper.jar ] || {
		say "/usr/share/java/zookeeper.jar is not installed (apt-get install -y zookeeper)"
		exit 77
	}
	local c q e i servers=() urls="" dirs=()
	read -r -a c <<<"$(three_ports)"
	read -r -a q <<<"$(three_ports)"
	read -r -a e <<<"$(three_ports)"
	for i in 0 1 2; do
		servers+=("server.$((i + 1))=127.0.0.1:${q[$i]}:${e[$i]}")
	done
	for i in 0 1 2; do
		local d=$dir/zk-m$((i + 1))
		mkdir -p "$d/data"
		echo "${c[$i]}" >"$d/port"
		echo $((i + 1)) >"$d/data/myid"
		printf '%s\n' tickTime=10 initLimit=1000 syncLimit=100 "dataDir=$d/data" \
			"clientPort=${c[$i]}" clientPortAddress=127.0.0.1 minSessionTimeout=20 \
			maxSessionTimeout=60000 admin.enableServer=false \
			4lw.commands.whitelist=srvr,ruok forceSync=no maxClientCnxns=0 \
			"${servers[@]}" >"$d/zoo.cfg"
		printf '%s\n' "exec java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \\" \
			"  -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar \\" \
			"  org.apache.zookeeper.server.quorum.QuorumPeerMain $d/zoo.cfg" >"$d/run"
		member_up "$d"
		dirs+=("$d")
		urls+="${urls:+,}127.0.0.1:${c[$i]}"
	done
	members_ready zk "${dirs[@]}" || return 1
	{
		echo "export FB_ZK_ENSEMBLE=zk://$urls"
		echo "export FB_ZK_MEMBERS=$(IFS=,; echo "${dirs[*]}")"
	} >>"$envfile"
}

# A redis-server called $1 on a free port, left in $port_taken.
port_taken=
redis_on() {
	port_taken=$(free_port)
	start_redis "$1" "$port_taken" "${2:-}"
}

# A replica called $1 of the redis-server on port $2, on a free port.
replica_on() {
	port_taken=$(free_port)
	start_redis "$1" "$port_taken" "" "$2"
}

# A Sentinel called $1 watching the primary on port $2 as master "fb":
# quorum 2, down after 300 ms, a failover given up after 2 s (as
# tests/servers.c). Its configuration is its own to rewrite.
sentinel_on() {
	local name=$1 of=$2 d=$dir/$1
	port_taken=$(free_port)
	mkdir -p "$d"
	printf '%s\n' "port $port_taken" "bind 127.0.0.1" "dir $d" "daemonize no" \
		"sentinel monitor fb 127.0.0.1 $of 2" "sentinel down-after-milliseconds fb 300" \
		"sentinel failover-timeout fb 2000" "sentinel parallel-syncs fb 1" >"$d/sentinel.conf"
	local pid
	pid=$(spawn "$name" "$d/log" redis-server "$d/sentinel.conf" --sentinel)
	await "$pid" "redis-cli -p $port_taken PING 2>/dev/null | grep -q PONG" "$d/log" "$name"
}

# Every Sentinel on ports $2... names the primary on $1, sees its replica
# and the other two (they say hello every 2 s): 60 s at most.
sentinels_agree() {
	local primary=$1 end=$((SECONDS + 60)) s ok
	shift
	while [ "$SECONDS" -lt "$end" ]; do
		ok=1
		for s in "$@"; do
			redis-cli -p "$s" SENTINEL get-master-addr-by-name fb 2>/dev/null |
				grep -qx "$primary" || ok=0
			[ "$(redis-cli -p "$s" SENTINEL replicas fb 2>/dev/null | grep -cx name)" = 1 ] || ok=0
			[ "$(redis-cli -p "$s" SENTINEL sentinels fb 2>/dev/null | grep -cx name)" = 2 ] || ok=0
		done
		[ "$ok" = 0 ] || return 0
		sleep 0.2
	done
	say "the Sentinels did not agree on their primary, replica and each other within 60 s"
	exit 3
}

start() {
	[ $# -gt 0 ] || set -- redis postgres zk etcd redlock
	for what in "$@"; do
		# one of each: a second would share the first's directory
		[ "$what" != redlock ] || what=node1
		[ "$what" != sentinel ] || what=primary
		[ "$what" != etcd-cluster ] || what=etcd-m1
		[ "$what" != zk-ensemble ] || what=zk-m1
		if [ -e "$dir/$what" ]; then
			say "$what is started already in $dir (scripts/servers.sh env; stop first)"
			exit 3
		fi
	done
	mkdir -p "$dir"
	touch "$envfile" "$dir/pids"
	for what in "$@"; do
		case $what in
		redis)
			with_retries redis_on redis
			echo "export FB_REDIS=redis://127.0.0.1:$port_taken/0" >>"$envfile"
			;;
		postgres) with_retries start_postgres ;;
		zk) with_retries start_zk ;;
		etcd) with_retries start_etcd ;;
		redlock)
			local n1 n2 n3 ft=$dir/node3.rc
			with_retries redis_on node1
			n1=$port_taken
			with_retries redis_on node2
			n2=$port_taken
			with_retries redis_on node3 "$ft"
			n3=$port_taken
			local nodes=127.0.0.1:$n1,127.0.0.1:$n2,127.0.0.1:$n3
			{
				echo "export FB_REDLOCK='redlock://$nodes?fence=incr'"
				echo "export FB_REDLOCK_JUMPY='redlock://$nodes?faketime=3:$ft&fence=incr'"
				echo "export FB_NODE3_FAKETIME=$ft"
			} >>"$envfile"
			;;
		sentinel)
			need redis-cli redis-tools
			local p r s1 s2 s3
			with_retries redis_on primary
			p=$port_taken
			with_retries replica_on replica "$p"
			r=$port_taken
			with_retries sentinel_on sentinel1 "$p"
			s1=$port_taken
			with_retries sentinel_on sentinel2 "$p"
			s2=$port_taken
			with_retries sentinel_on sentinel3 "$p"
			s3=$port_taken
			sentinels_agree "$p" "$s1" "$s2" "$s3"
			{
				echo "export FB_SENTINEL='redis://127.0.0.1:$s1,127.0.0.1:$s2,127.0.0.1:$s3/0?sentinel=fb'"
				echo "export FB_SENTINELS=127.0.0.1:$s1,127.0.0.1:$s2,127.0.0.1:$s3"
				echo "export FB_SENTINEL_PRIMARY=127.0.0.1:$p FB_SENTINEL_REPLICA=127.0.0.1:$r"
			} >>"$envfile"
			;;
		etcd-cluster) with_retries etcd_cluster ;;
		zk-ensemble) with_retries zk_ensemble ;;
		*)
			say "unknown server '$what' (redis, postgres, zk, etcd, redlock, sentinel, etcd-cluster, zk-ensemble)"
			exit 2
			;;
		esac
	done
	cat "$envfile"
}

stop() {
	[ -f "$dir/pids" ] || return 0
	local pids
	pids=$(cat "$dir/pids")
	for pid in $pids; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in $pids; do
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	done
	# a member a nemesis restarted has a PID of its own, in its pid file
	for f in "$dir"/*/pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		kill -TERM "$pid" 2>/dev/null || continue
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	done
	if [ -f "$dir/dirs" ]; then
		while read -r d; do rm -rf "$d"; done <"$dir/dirs"
	fi
	rm -rf "$dir"
}

case ${1:-} in
start)
	shift
	start "$@"
	;;
env) cat "$envfile" ;;
stop) stop ;;
*)
	sed -n '2,43p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
