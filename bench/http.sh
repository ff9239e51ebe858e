#!/usr/bin/env bash
# bench/http.sh: the HTTP hot path benchmark of the example server (issue 10).
#
# Builds examples/server and bench/vaultload, then, for each phase of
# $PHASES, starts a server on 127.0.0.1:$PORT, drives it with vaultload
# (the official vault/api client, 32 workers) and prints its table: ops/s,
# latency, and the server's CPU per operation from /proc/<pid>/stat.
#
#   mem      kv and lease suites on the memory store (-data memory)
#   bolt     kv and lease suites on a bbolt file (fsync on every commit)
#   restart  issue $RESTART_LEASES leases on a bbolt file, stop the server,
#            start it again: time until /v1/sys/health answers, RSS, and a
#            check that the leases are still there
#
# Usage: bench/http.sh                       # PHASES="mem bolt restart"
#        PHASES=mem REPS=5 bench/http.sh
#
# Settings (environment): PHASES, PORT (18200), WORKERS (32), OPS (20000),
# LIST_OPS (300), REPS (3), PREFIX_LEASES (10000), RESTART_LEASES (1000000),
# KEEP (a directory to keep the bolt files and logs in; default: a
# temporary one, removed at the end), SERVER (a server binary to run
# instead of building ./examples/server: an older build, to compare). The machine should be otherwise idle:
# the "other%" column says how much CPU something else took.
set -euo pipefail

PHASES=${PHASES:-"mem bolt restart"}
PORT=${PORT:-18200}
WORKERS=${WORKERS:-32}
OPS=${OPS:-20000}
LIST_OPS=${LIST_OPS:-300}
REPS=${REPS:-3}
PREFIX_LEASES=${PREFIX_LEASES:-10000}
RESTART_LEASES=${RESTART_LEASES:-1000000}
TOKEN=ROOT
ADDR=127.0.0.1:$PORT

cd "$(dirname "$0")/.."
if [[ -n ${KEEP:-} ]]; then
	work=$KEEP
	mkdir -p "$work"
else
	work=$(mktemp -d)
fi
server_pid=
cleanup() {
	if [[ -n $server_pid ]]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	if [[ -z ${KEEP:-} ]]; then
		rm -rf "$work"
	fi
}
trap cleanup EXIT

echo "# $(date -u +%FT%TZ) $(go version) nproc=$(nproc) loadavg: $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -n ${SERVER:-} ]]; then
	cp "$SERVER" "$work/keel-server"
else
	go build -o "$work/keel-server" ./examples/server
fi
go build -o "$work/vaultload" ./bench/vaultload

# start_server DATA LOG: starts the server on DATA and waits until it is healthy.
start_server() {
	"$work/keel-server" -addr "$ADDR" -root-token "$TOKEN" -data "$1" 2>"$2" &
	server_pid=$!
	for _ in $(seq 1000); do
		if curl -sf -o /dev/null "http://$ADDR/v1/sys/health"; then
			return 0
		fi
		sleep 0.01
	done
	echo "server did not start; see $2" >&2
	return 1
}

stop_server() {
	kill -TERM "$server_pid"
	wait "$server_pid" || true
	server_pid=
}

# mount_leased: a kv mount whose reads issue leases, at leased/.
mount_leased() {
	curl -sf -H "X-Secrets-Token: $TOKEN" -X POST \
		-d '{"type":"kv","options":{"leased_passthrough":"true"}}' \
		"http://$ADDR/v1/sys/mounts/leased" >/dev/null
}

load() {
	"$work/vaultload" -addr "http://$ADDR" -token "$TOKEN" -token-header X-Secrets-Token \
		-kv-mount secret -lease-mount leased -server-pid "$server_pid" \
		-workers "$WORKERS" -ops "$OPS" -list-ops "$LIST_OPS" -reps "$REPS" \
		-prefix-leases "$PREFIX_LEASES" "$@"
}

for phase in $PHASES; do
	echo
	echo "## $phase   loadavg: $(cut -d' ' -f1-3 /proc/loadavg)"
	case $phase in
	mem)
		start_server memory "$work/mem.log"
		mount_leased
		load -suite kv,lease
		stop_server
		;;
	bolt)
		rm -f "$work/bolt.db"
		start_server "$work/bolt.db" "$work/bolt.log"
		mount_leased
		load -suite kv,lease
		stop_server
		;;
	restart)
		rm -f "$work/restart.db"
		start_server "$work/restart.db" "$work/restart-fill.log"
		mount_leased
		load -suite fill -fill-leases "$RESTART_LEASES" -reps 1
		stop_server
		echo "bolt file: $(du -h "$work/restart.db" | cut -f1)"
		t0=$(date +%s%N)
		start_server "$work/restart.db" "$work/restart.log"
		t1=$(date +%s%N)
		rss_healthy=$(awk '/VmRSS/ {print $2}' "/proc/$server_pid/status")
		sleep 1
		rss_later=$(awk '/VmRSS/ {print $2}' "/proc/$server_pid/status")
		echo "| restart with $RESTART_LEASES leases | healthy after $(((t1 - t0) / 1000000)) ms | RSS $((rss_healthy / 1024)) MiB when healthy, $((rss_later / 1024)) MiB 1 s later |"
		# The leases are still there: list them (one large answer, after
		# the RSS was taken).
		n=$(curl -sf -X LIST -H "X-Secrets-Token: $TOKEN" "http://$ADDR/v1/sys/leases/lookup/leased/lease/s/" | tr -cd , | wc -c)
		echo "leases listed after the restart: $((n - 6))"
		stop_server
		;;
	*)
		echo "unknown phase $phase" >&2
		exit 2
		;;
	esac
done
