#!/usr/bin/env bash
# Prints N IDs, one a line, with the Python client:
#   clients/python/examples/ids.sh --mode remote|buffered|leased --count N
# from the servers in SNOWFLAKED_SERVERS (SNOWFLAKED_CACERT for https).
# Needs only Debian's python3: the library is the standard library's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PYTHONPATH="$here/../src${PYTHONPATH:+:$PYTHONPATH}" exec /usr/bin/python3 "$here/ids.py" "$@"
