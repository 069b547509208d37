#!/bin/sh
# bench-access.sh: what the access gate costs. Small-file requests per
# second and the server's CPU per request (wrk, 64 connections, a 4 KiB
# file), then the throughput of a 1 GiB download and of a 1 GiB upload
# (curl), for largo without an access file and for largo with an access
# file of 20 rules and a user signing in with Basic auth (an argon2id
# password, checked once a minute and cached), side by side: the two
# servers run one after the other, REPS times (default 3), interleaved.
# Then a flood: 30 wrong passwords for one user at once, with the
# server's peak memory above idle and the answers counted.
#
#   make build && scripts/bench-access.sh [REPS]
#
# With BEFORE=/path/to/an/older/largo, the two servers compared are that
# binary and this one, both with the access file of 20 rules (kinds
# "before" and "rules"): what a change costs the gate's path.
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

mkdir -p "$work/data/pub" "$work/data/area1"
head -c 4096 /dev/urandom > "$work/data/pub/small.bin"
head -c $((1 << 30)) /dev/urandom > "$work/big.bin"
cp "$work/big.bin" "$work/data/pub/big.bin"
password=bench-password-1
token=bench-token-0123456789
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

# cpu PID: the process's user and system time, in clock ticks.
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
ticks=$(getconf CLK_TCK)

# kib PID FIELD: a figure of /proc/PID/status, in KiB.
kib() { awk '/^'"$2"':/ { print $2 }' "/proc/$1/status"; }

# start KIND: largo plain (writes with a token) or with the access file
# (rules), or the BEFORE binary with it (before).
start() {
	port=$(free_port)
	if [ "$1" = rules ] || [ "$1" = before ]; then
		bin=$largo
		[ "$1" = before ] && bin=$BEFORE
		"$bin" serve "$work/data" --listen 127.0.0.1:$port --access "$work/access.toml" --log-format json 2>/dev/null >/dev/null &
		cred="-u bench:$password"
		hdr="Authorization: Basic $(printf 'bench:%s' "$password" | base64)"
	else
		"$largo" serve "$work/data" --listen 127.0.0.1:$port --upload --token $token --log-format json 2>/dev/null >/dev/null &
		cred="-u :$token"
		hdr="X-None: 1"
	fi
	pid=$!
	[ "${2:-}" = cold ] && cred=""
	until curl -s -o /dev/null $cred "http://127.0.0.1:$port/pub/small.bin"; do sleep 0.1; done
}

stop() { kill $pid; wait $pid 2>/dev/null || true; pid=""; }

# run KIND: one measured run.
run() {
	start "$1"
	c0=$(cpu $pid)
	out=$(wrk -t2 -c64 -d10s -H "$hdr" "http://127.0.0.1:$port/pub/small.bin")
	c1=$(cpu $pid)
	n=$(echo "$out" | awk '/requests in/ {print $1}')
	rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
	us=$(awk -v c="$((c1 - c0))" -v t="$ticks" -v n="$n" 'BEGIN { printf "%.1f", c / t * 1e6 / n }')
	down=$(curl -s $cred -o /dev/null -w '%{speed_download}' "http://127.0.0.1:$port/pub/big.bin" | awk '{printf "%.0f", $1 / 1e6}')
	up=$(curl -s $cred -T "$work/big.bin" -o /dev/null -w '%{speed_upload}' "http://127.0.0.1:$port/area1/up-$1.bin" | awk '{printf "%.0f", $1 / 1e6}')
	rm -f "$work/data/area1/up-$1.bin"
	stop
	echo "$1 $rps $us $down $up"
}

kinds="plain rules"
[ -n "${BEFORE:-}" ] && kinds="before rules"
echo "kind req/s cpu_us/req down_MB/s up_MB/s"
: > "$work/results"
i=0
while [ $i -lt "$reps" ]; do
	for k in $kinds; do
		run $k | tee -a "$work/results"
	done
	i=$((i + 1))
done
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
for k in $kinds; do
	set --
	for col in 2 3 4 5; do
		set -- "$@" "$(awk -v k=$k -v c=$col '$1 == k {print $c}' "$work/results" | median)"
	done
	echo "median $k: $1 req/s, $2 µs CPU/req, down $3 MB/s, up $4 MB/s"
done

# The flood: 30 wrong passwords for the user at once, from one address,
# to a server that has checked no password yet.
start rules cold
idle=$(kib $pid VmRSS)
: > "$work/codes"
i=0
while [ $i -lt 30 ]; do
	curl -s -o /dev/null -w '%{http_code}\n' -u bench:wrong "http://127.0.0.1:$port/pub/small.bin" >> "$work/codes" &
	i=$((i + 1))
done
wait_curls() { while [ "$(wc -l < "$work/codes")" -lt 30 ]; do sleep 0.1; done; }
wait_curls
peak=$(kib $pid VmHWM)
stop
echo "flood of 30 wrong passwords: idle $((idle / 1024)) MiB, peak $((peak / 1024)) MiB (+$(((peak - idle) / 1024)) MiB); answers: $(sort "$work/codes" | uniq -c | awk '{printf "%s x%s ", $2, $1}')"
