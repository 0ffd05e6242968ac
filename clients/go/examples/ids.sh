#!/usr/bin/env bash
# Prints N IDs, one a line, with the Go client:
#   clients/go/examples/ids.sh --mode remote|buffered|leased --count N
# from the servers in SNOWFLAKED_SERVERS (SNOWFLAKED_CACERT for https).
# Builds the example with Debian's go (golang-go), standard library only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${TMPDIR:-/tmp}/snowflaked-go-example-$UID
(cd "$here/.." && GOFLAGS=-mod=mod GOPROXY=off go build -o "$bin" ./examples/ids)
exec "$bin" "$@"
