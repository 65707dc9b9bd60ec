#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the session store's tests and
# prints, on its last line, the export that points the tests at it:
#
#   eval "$(bash .ci/postgres.sh | tail -n 1)"   # start (installs PostgreSQL if missing)
#   bash .ci/postgres.sh stop                     # stop it and remove its files
#
# Run as root on a Debian machine: PostgreSQL comes from Debian's packages,
# and the server runs as the postgres user (it refuses to run as root) from a
# cluster in a temporary directory, listening on 127.0.0.1 only. The port is
# ABRIDGE_PG_PORT (default 54329). Everything but the last line goes to
# stderr. Starting when a server started by this script is already running
# reuses it.
set -euo pipefail

port="${ABRIDGE_PG_PORT:-54329}"
db=abridge_test
state="${TMPDIR:-/tmp}/abridge-postgres-${port}.dir" # holds the cluster's directory

log() { echo "postgres.sh: $*" >&2; }

bindir() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	[ -n "$d" ] && [ -x "$d/initdb" ] && echo "$d"
}

as_postgres() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

url="postgres://postgres@127.0.0.1:${port}/${db}?sslmode=disable"

if [ "${1:-start}" = stop ]; then
	if [ ! -f "$state" ]; then
		log "no server started by this script on port $port"
		exit 0
	fi
	dir=$(cat "$state")
	bin=$(bindir) || { log "PostgreSQL is not installed"; exit 1; }
	as_postgres "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
	rm -rf "$dir" "$state"
	log "stopped"
	exit 0
fi

if ! bin=$(bindir); then
	if [ "$(id -u)" -ne 0 ]; then
		log "PostgreSQL is not installed, and installing it needs root"
		exit 1
	fi
	log "installing PostgreSQL from Debian's packages"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update >&2
	apt-get install -y --no-install-recommends postgresql >&2
	bin=$(bindir) || { log "PostgreSQL installed, but initdb not found"; exit 1; }
fi

if [ -f "$state" ]; then
	dir=$(cat "$state")
	if as_postgres "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
		log "reusing the server in $dir"
		echo "export ABRIDGE_TEST_POSTGRES_URL='$url'"
		exit 0
	fi
	rm -rf "$dir" "$state"
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/abridge-postgres.XXXXXX")
if [ "$(id -u)" -eq 0 ]; then
	chown postgres:postgres "$dir"
fi
chmod 700 "$dir"
echo "$dir" >"$state"

log "creating a cluster in $dir"
as_postgres "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >&2
log "starting it on 127.0.0.1:$port"
if ! as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
	-o "-c listen_addresses=127.0.0.1 -p $port -k $dir" start >&2; then
	log "the server did not start; its log:"
	cat "$dir/server.log" >&2 || true
	exit 1
fi
as_postgres "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres "$db" >&2
log "ready: database $db"
echo "export ABRIDGE_TEST_POSTGRES_URL='$url'"
