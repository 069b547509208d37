#!/bin/sh
# bench-transfers.sh: the client and upload figures of docs/BENCHMARKS.md
# that `largo bench` does not take: `largo get` (one stream and -j 4)
# beside curl against largo and nginx, and a 1 GiB upload by plain PUT and
# by tus and by the IETF resumable-upload protocol beside dd writing the
# same bytes to the same disk.
#
#   make build && scripts/bench-transfers.sh [REPS [downloads|uploads|ietf]]
#
# Every case runs REPS times (default 3) against a fresh server; each line
# printed is one run. "ietf" runs only a plain PUT and the same PUT made
# resumable in the IETF protocol, REPS pairs in alternating order. Wall, user and system seconds and peak RSS come from
# GNU time for the client; the server's peak is VmHWM at the end less VmRSS
# before the request. Needs curl, nginx and GNU time; traffic stays on
# 127.0.0.1.
set -eu

reps=${1:-3}
only=${2:-}
largo=$(pwd)/largo
size=$((1 << 30))
work=$(mktemp -d "${TMPDIR:-/tmp}/largo-bench-transfers.XXXXXX")
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

mkdir -p "$work/data" "$work/out" "$work/up" "$work/nginx"
head -c $size /dev/urandom > "$work/data/file.bin"
sum=$(sha256sum < "$work/data/file.bin" | cut -d' ' -f1)

# free_port picks a port between 20000 and 39999 that nothing listens on.
free_port() {
	while :; do
		p=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 20000))
		curl -s -o /dev/null "http://127.0.0.1:$p/" || { echo $p; return; }
	done
}

wait_port() {
	i=0
	until curl -s -o /dev/null "http://127.0.0.1:$1/"; do
		i=$((i + 1))
		[ $i -lt 100 ] || { echo "server on port $1 did not start" >&2; exit 1; }
		sleep 0.1
	done
}

# kib PID FIELD: a figure of /proc/PID/status, in KiB.
kib() { awk '/^'"$2"':/ { print $2 }' "/proc/$1/status"; }

# start_largo DIR [FLAGS...]: sets port and pid.
start_largo() {
	dir=$1; shift
	port=$(free_port)
	"$largo" serve "$dir" --listen "127.0.0.1:$port" --log-format json "$@" > "$work/largo.log" 2>&1 &
	pid=$!; pids="$pids $pid"
	wait_port "$port"
}

start_nginx() {
	port=$(free_port)
	user=""
	# As root, nginx's workers would run as nobody, who cannot read the
	# scratch folder.
	[ "$(id -u)" != 0 ] || user="user root;"
	cat > "$work/nginx/nginx.conf" <<EOF
$user
daemon off;
worker_processes 1;
pid $work/nginx/nginx.pid;
events {}
http {
	access_log off;
	sendfile on;
	tcp_nopush on;
	server {
		listen 127.0.0.1:$port;
		root $work/data;
	}
}
EOF
	nginx -p "$work/nginx" -e "$work/nginx/error.log" -c "$work/nginx/nginx.conf" &
	pid=$!; pids="$pids $pid"
	wait_port "$port"
}

stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; }

# timed LABEL CMD...: runs CMD under GNU time and prints one line.
timed() {
	label=$1; shift
	/usr/bin/time -f '%e %U %S %M' -o "$work/time" "$@"
	read -r wall user sys maxkb < "$work/time"
	awk -v l="$label" -v w="$wall" -v u="$user" -v s="$sys" -v m="$maxkb" -v n=$size \
		'BEGIN { printf "%-34s %7.2f s %7.0f MB/s  client CPU %5.2f s  client peak %6.1f MiB\n", l, w, n / w / 1e6, u + s, m / 1024 }'
}

check() {
	got=$(sha256sum < "$1" | cut -d' ' -f1)
	[ "$got" = "$sum" ] || { echo "sha256 mismatch on $1" >&2; exit 1; }
	rm -f "$1"
}

[ "$only" = uploads ] || [ "$only" = ietf ] || {
echo "# downloads of 1 GiB ($reps runs each)"
for server in largo nginx; do
	for r in $(seq "$reps"); do
		if [ $server = largo ]; then start_largo "$work/data"; else start_nginx; fi
		url=http://127.0.0.1:$port/file.bin
		cat "$work/data/file.bin" > /dev/null
		timed "$server: curl" curl -s -f -o "$work/out/f" "$url"; check "$work/out/f"
		timed "$server: largo get" "$largo" get -q -o "$work/out/f" "$url"; check "$work/out/f"
		timed "$server: largo get -j 4" "$largo" get -q -j 4 -o "$work/out/f" "$url"; check "$work/out/f"
		stop
	done
done
}

# upload HOW: one 1 GiB upload to a fresh server, its line and the
# server's memory; the stored file is checked.
upload() {
	start_largo "$work/up" --upload --upload-open
	idle=$(kib "$pid" VmRSS)
	case $1 in
	put)
		timed "largo: curl -T (PUT)" curl -s -f -o /dev/null -T "$work/data/file.bin" "http://127.0.0.1:$port/f.bin" ;;
	ietf)
		# The same PUT made resumable (IETF draft): a 104, the bytes in
		# the resumable staging, then placed.
		timed "largo: curl -T (PUT, IETF ?1)" curl -s -f -o /dev/null -T "$work/data/file.bin" \
			-H "Upload-Complete: ?1" -H "Upload-Draft-Interop-Version: 9" "http://127.0.0.1:$port/f.bin" ;;
	patch)
		# The server's tus path alone: one creation, one PATCH.
		loc=$(curl -s -f -D - -o /dev/null -X POST -H "Tus-Resumable: 1.0.0" \
			-H "Upload-Length: $size" -H "Upload-Metadata: filename $(printf f.bin | base64)" \
			"http://127.0.0.1:$port/_largo/uploads/" | tr -d '\r' | awk 'tolower($1) == "location:" { print $2 }')
		timed "largo: curl tus PATCH" curl -s -f -o /dev/null -X PATCH -H "Tus-Resumable: 1.0.0" \
			-H "Content-Type: application/offset+octet-stream" -H "Upload-Offset: 0" \
			-T "$work/data/file.bin" "$loc" ;;
	tus)
		timed "largo: largo put (tus)" "$largo" put -q "$work/data/file.bin" "http://127.0.0.1:$port/f.bin" ;;
	ietfput)
		timed "largo: largo put --protocol ietf" "$largo" put -q --protocol ietf "$work/data/file.bin" "http://127.0.0.1:$port/f.bin" ;;
	esac
	peak=$(kib "$pid" VmHWM)
	cpu=$(awk '{ print ($14 + $15) / 100 }' "/proc/$pid/stat")
	awk -v i="$idle" -v p="$peak" -v c="$cpu" 'BEGIN { printf "    server CPU %.2f s, idle %.1f MiB, peak %.1f MiB, peak above idle %.1f MiB\n", c, i / 1024, p / 1024, (p - i) / 1024 }'
	stop
	check "$work/up/f.bin"
}

[ "$only" = downloads ] && exit
if [ "$only" = ietf ]; then
	# A plain PUT beside the same PUT through the IETF path, in turns
	# whose order alternates (a run after another one's 1 GiB is slower).
	echo "# uploads of 1 GiB, PUT beside IETF ($reps pairs)"
	for r in $(seq "$reps"); do
		order="put ietf"
		[ $((r % 2)) = 1 ] || order="ietf put"
		for how in $order; do
			sync
			upload $how
		done
	done
	exit
fi
echo "# uploads of 1 GiB ($reps runs each)"
for r in $(seq "$reps"); do
	timed "dd (bs=1M, conv=fsync)" dd if="$work/data/file.bin" of="$work/up/dd.bin" bs=1M conv=fsync status=none
	check "$work/up/dd.bin"
	for how in put ietf patch tus ietfput; do
		upload $how
	done
done
