#!/usr/bin/env bash
# Install, from Debian 12's packages, everything tcopy needs to build, test
# and benchmark.  Idempotent; needs root (or sudo).
set -euo pipefail

packages=(
	make gcc
	postgresql-15 postgresql-server-dev-15	# the extension (PGXS) and its tests
	libkrb5-dev								# gssapi.h, which the server's libpq headers include
	librocksdb-dev							# the tserver's store
	libraft-dev libuv1-dev					# the tserver's replica groups (Raft)
	libprotobuf-c-dev protobuf-c-compiler	# wire protocol
	libgoogle-perftools-dev					# tcmalloc for the tserver
	libssl-dev								# TLS of tcp:, HMAC of the token handshake
	openssl									# certificates the TLS tests make
	socat									# a TLS-relaying proxy (011_tls.pl: the proofs are bound to the channel)
	libipc-run-perl perl					# prove and PostgreSQL::Test::Cluster
	iproute2								# ip netns, veths: the tserver-on-other-hosts test
	systemd									# systemd-analyze verify: the service unit's test
	clang libclang-rt-14-dev				# the libFuzzer harness (make -C test fuzz)
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
