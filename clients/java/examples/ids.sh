#!/usr/bin/env bash
# Prints N IDs, one a line, with the Java client:
#   clients/java/examples/ids.sh --mode remote|buffered|leased --count N
# from the servers in SNOWFLAKED_SERVERS (SNOWFLAKED_CACERT for https).
# Builds the jar with Debian's JDK 17 (openjdk-17-jdk-headless), then runs
# the example from its source (Java's single-file launcher).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${TMPDIR:-/tmp}/snowflaked-java-example-$UID
jar=$(OUT=$out bash "$here/../build.sh" | tail -1)
exec java -cp "$jar" "$here/Ids.java" "$@"
