#!/bin/sh
# bench-access.sh: what access rules cost. Small-file requests per second
# (wrk, 64 connections, a 4 KiB file) and the throughput of a 1 GiB
# download, for largo without rules and for largo with an access file of
# 20 rules and a user signing in with Basic auth (an argon2id password,
# checked once a minute and cached), side by side: the two servers run
# one after the other, REPS times (default 3), interleaved.
#
#   make build && scripts/bench-access.sh [REPS]
#
# Prints one line per run and the medians. Needs wrk and curl; traffic
# stays on 127.0.0.1.
set -eu

reps=${1:-3}
largo=$(pwd)/largo
work=$(mktemp -d "${TMPDIR:-/tmp}/largo-bench-access.XXXXXX")
pid=""
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

mkdir -p "$work/data/pub"
head -c 4096 /dev/urandom > "$work/data/pub/small.bin"
head -c $((1 << 30)) /dev/zero > "$work/data/pub/big.bin"
password=bench-password-1
hash=$(printf '%s\n' "$password" | "$largo" passwd)
{
	printf '[[user]]\nname = "bench"\npassword = "%s"\n\n' "$hash"
	printf '[[rule]]\npath = "/"\nusers = ["*"]\nallow = []\n\n'
	i=1
	while [ $i -le 18 ]; do
		printf '[[rule]]\npath = "/area%d"\nusers = ["bench"]\nallow = ["read", "list", "write"]\n\n' $i
		i=$((i + 1))
	done
	printf '[[rule]]\npath = "/pub"\nusers = ["bench"]\nallow = ["read", "list"]\n'
} > "$work/access.toml"

free_port() {
	while :; do
		p=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 20000))
		curl -s -o /dev/null "http://127.0.0.1:$p/" || { echo $p; return; }
	done
}

# run KIND: start largo (plain, or with the access file), measure, stop.
run() {
	port=$(free_port)
	if [ "$1" = rules ]; then
		"$largo" serve "$work/data" --listen 127.0.0.1:$port --access "$work/access.toml" --log-format json 2>/dev/null >/dev/null &
		cred="-u bench:$password"
		hdr="Authorization: Basic $(printf 'bench:%s' "$password" | base64)"
	else
		"$largo" serve "$work/data" --listen 127.0.0.1:$port --log-format json 2>/dev/null >/dev/null &
		cred=""
		hdr="X-None: 1"
	fi
	pid=$!
	until curl -s -o /dev/null $cred "http://127.0.0.1:$port/pub/small.bin"; do sleep 0.1; done
	rps=$(wrk -t2 -c64 -d10s -H "$hdr" "http://127.0.0.1:$port/pub/small.bin" | awk '/Requests\/sec/ {print $2}')
	mbs=$(curl -s $cred -o /dev/null -w '%{speed_download}' "http://127.0.0.1:$port/pub/big.bin" | awk '{printf "%.0f", $1 / 1e6}')
	kill $pid; wait $pid 2>/dev/null || true; pid=""
	echo "$1 $rps $mbs"
}

echo "kind req/s MB/s"
: > "$work/results"
i=0
while [ $i -lt "$reps" ]; do
	run plain | tee -a "$work/results"
	run rules | tee -a "$work/results"
	i=$((i + 1))
done
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
for k in plain rules; do
	r=$(awk -v k=$k '$1 == k {print $2}' "$work/results" | median)
	m=$(awk -v k=$k '$1 == k {print $3}' "$work/results" | median)
	echo "median $k: $r req/s, $m MB/s"
done
