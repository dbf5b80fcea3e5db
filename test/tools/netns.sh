#!/bin/bash
# netns.sh
#	Network namespaces standing for other machines, for the tests of
#	tservers reached over tcp: (test/ext/173_netns_tcp.pl).  Run as root.
#
#	netns.sh up N DIR
#	    Namespace K (1..N) is tcopynsK, joined to this host by a veth pair:
#	    10.231.K.1/24 on the host's end (tcopynsKh), 10.231.K.2/24 inside
#	    (tcopynsKn), and its own lo up.  With DELAY_US set, a netem qdisc
#	    delays each end's output by that many microseconds (a round trip
#	    2 x DELAY_US); DIR/netem says "yes" when that worked, else "no"
#	    (kernels without sch_netem: the test then puts test/tools/
#	    delay_relay in the way instead), "off" without DELAY_US; DIR/delay_us
#	    holds DELAY_US (0 without it).
#	    In each namespace a command runner runs as TCOPY_TEST_USER (default
#	    postgres), which may not enter namespaces itself: every line that
#	    user writes to the FIFO DIR/nsK.cmd, "PIDFILE COMMAND...", is run in
#	    the background inside the namespace by bash ("exec COMMAND...", so
#	    redirections may follow), and the pid of the command is written to
#	    PIDFILE (as a whole: it appears complete or not at all).  DIR/nsK.ready
#	    appears once runner K reads its FIFO.
#	    Whatever a previous run left (namespaces tcopyns*, their processes,
#	    their veths) is removed first.
#
#	    Each namespace routes 10.231.0.0/16 through the host, which forwards
#	    (net.ipv4.ip_forward 1 while they are up: its value before is kept
#	    in DIR/ip_forward and set back by down), so that namespaces reach
#	    each other: a replica group's members, one in each.  A link runner,
#	    as root on the host, takes lines "down K" and "up K" from the FIFO
#	    DIR/links.cmd (written by TCOPY_TEST_USER) and sets the host's end
#	    of namespace K's link down or up (a partition of K from the host
#	    and the others), then appends the line to DIR/links.done.
#
#	netns.sh down DIR
#	    Kill every process in the namespaces tcopyns* (the runners and all
#	    they started), delete the namespaces and the veths, remove the
#	    FIFOs of DIR.  Idempotent; DIR may be missing.
#
#	The prefix tcopyns and the addresses 10.231.0.0/16 are this script's
#	alone (the benchmarks use tcopyb and 10.232.0.0/16).
set -euo pipefail

SELF=$(readlink -f "$0")
PREFIX=tcopyns
NET=10.231

say()
{
	echo "netns.sh: $*" >&2
}

# the namespaces named PREFIX<digits>
our_namespaces()
{
	ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}[0-9]+\$" || true
}

down_all()
{
	local ns pids link
	for ns in $(our_namespaces); do
		pids=$(ip netns pids "$ns" 2>/dev/null || true)
		if [ -n "$pids" ]; then
			# shellcheck disable=SC2086
			kill -KILL $pids 2>/dev/null || true
		fi
		ip netns del "$ns" 2>/dev/null || true
	done
	# the host's end goes with the namespace's end, but not always at once
	for _ in $(seq 1 50); do
		link=$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' |
			grep -E "^${PREFIX}[0-9]+h\$" || true)
		[ -z "$link" ] && return 0
		for l in $link; do
			ip link del "$l" 2>/dev/null || true
		done
		sleep 0.1
	done
	say "could not delete the links: $link"
	return 1
}

up()
{
	local n=$1 dir=$2 user=${TCOPY_TEST_USER:-postgres}
	local k ns netem=off
	down_all
	mkdir -p "$dir"
	rm -f "$dir"/ns*.cmd "$dir"/ns*.ready "$dir"/netem "$dir"/delay_us
	chown "$user" "$dir"
	[ -n "${DELAY_US:-}" ] && netem=yes
	for k in $(seq 1 "$n"); do
		ns=$PREFIX$k
		ip netns add "$ns"
		ip link add "${ns}h" type veth peer name "${ns}n"
		ip link set "${ns}n" netns "$ns"
		ip addr add "$NET.$k.1/24" dev "${ns}h"
		ip link set "${ns}h" up
		ip -n "$ns" addr add "$NET.$k.2/24" dev "${ns}n"
		ip -n "$ns" link set "${ns}n" up
		ip -n "$ns" link set lo up
		ip -n "$ns" route add "$NET.0.0/16" via "$NET.$k.1"
		if [ "$netem" = yes ]; then
			if ! tc qdisc add dev "${ns}h" root netem delay "${DELAY_US}us" 2>>"$dir/netem.log" ||
				! ip netns exec "$ns" tc qdisc add dev "${ns}n" root netem delay "${DELAY_US}us" \
				2>>"$dir/netem.log"; then
				netem=no
			fi
		fi
		mkfifo -m 600 "$dir/ns$k.cmd"
		chown "$user" "$dir/ns$k.cmd"
		# its own session, no terminal: nothing of the caller's reaches it
		setsid ip netns exec "$ns" runuser -u "$user" -- bash "$SELF" runner "$dir/ns$k.cmd" \
			</dev/null >"$dir/ns$k.runner.log" 2>&1 &
	done
	# a netem on one link only would make the links unlike: all or none
	if [ "$netem" = no ]; then
		for k in $(seq 1 "$n"); do
			tc qdisc del dev "$PREFIX${k}h" root 2>/dev/null || true
			ip netns exec "$PREFIX$k" tc qdisc del dev "$PREFIX${k}n" root 2>/dev/null || true
		done
	fi
	echo "$netem" >"$dir/netem"
	echo "${DELAY_US:-0}" >"$dir/delay_us"
	cat /proc/sys/net/ipv4/ip_forward >"$dir/ip_forward"
	echo 1 >/proc/sys/net/ipv4/ip_forward
	rm -f "$dir/links.cmd" "$dir/links.done"
	mkfifo -m 600 "$dir/links.cmd"
	chown "$user" "$dir/links.cmd"
	: >"$dir/links.done"
	chown "$user" "$dir/links.done"
	setsid bash "$SELF" links "$dir/links.cmd" "$dir/links.done" </dev/null >"$dir/links.log" 2>&1 &
	echo $! >"$dir/links.pid"
	for k in $(seq 1 "$n"); do
		for _ in $(seq 1 100); do
			[ -e "$dir/ns$k.ready" ] && break
			sleep 0.05
		done
		if [ ! -e "$dir/ns$k.ready" ]; then
			say "the runner of $PREFIX$k did not start:"
			cat "$dir/ns$k.runner.log" >&2
			return 1
		fi
	done
}

# inside the namespace, as the test user
runner()
{
	local fifo=$1 line pidfile
	# read and write: the FIFO never reaches EOF when a writer closes it
	exec 3<>"$fifo"
	touch "${fifo%.cmd}.ready"
	while IFS= read -r line <&3; do
		pidfile=${line%% *}
		bash -c "exec ${line#* }" </dev/null >/dev/null 2>&1 &
		echo $! >"$pidfile.tmp" && mv "$pidfile.tmp" "$pidfile"
	done
}

# on the host, as root: "down K" / "up K" from the FIFO, for namespace K's link
links()
{
	local fifo=$1 done=$2 line
	exec 3<>"$fifo"
	while IFS= read -r line <&3; do
		if [[ "$line" =~ ^(down|up)\ ([0-9]+)$ ]]; then
			ip link set "$PREFIX${BASH_REMATCH[2]}h" "${BASH_REMATCH[1]}" &&
				echo "$line" >>"$done"
		fi
	done
}

# what up set on the host, back as it was
host_down()
{
	local dir=$1
	if [ -s "$dir/links.pid" ]; then
		kill "$(cat "$dir/links.pid")" 2>/dev/null || true
		rm -f "$dir/links.pid"
	fi
	if [ -s "$dir/ip_forward" ]; then
		cat "$dir/ip_forward" >/proc/sys/net/ipv4/ip_forward
		rm -f "$dir/ip_forward"
	fi
	rm -f "$dir/links.cmd"
}

case "${1:-}" in
	up)
		[ $# -eq 3 ] || { say "usage: netns.sh up N DIR"; exit 2; }
		up "$2" "$3"
		;;
	down)
		[ $# -eq 2 ] || { say "usage: netns.sh down DIR"; exit 2; }
		host_down "$2"
		down_all
		rm -f "$2"/ns*.cmd "$2"/ns*.ready
		;;
	links)
		links "$2" "$3"
		;;
	runner)
		runner "$2"
		;;
	*)
		say "usage: netns.sh up N DIR | down DIR"
		exit 2
		;;
esac
