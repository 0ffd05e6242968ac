#!/usr/bin/env bash
# Builds the Java client with Debian's JDK 17 alone: the jar
# (build/snowflaked-client-<version>.jar, here in clients/java, or in $OUT),
# and with `test` its JUnit 5 tests (Debian's junit5) against a real cluster
# (clients/testing/cluster.py; $SNOWFLAKED_BIN the daemon).
#   clients/java/build.sh [test [JUnit selector...] | test-classes]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/build}
version=$(sed -n 's/.*String VERSION = "\(.*\)";/\1/p' "$here/src/main/java/snowflaked/client/Client.java")
rm -rf "$out/classes" "$out/test-classes"
mkdir -p "$out/classes" "$out/test-classes"
javac --release 17 -Xlint:all -Werror -d "$out/classes" $(find "$here/src/main/java" -name '*.java')
jar --create --file "$out/snowflaked-client-$version.jar" -C "$out/classes" .
echo "$out/snowflaked-client-$version.jar"
[ "${1:-}" = test ] || [ "${1:-}" = test-classes ] || exit 0
junit=/usr/share/java/junit-platform-console-standalone.jar
javac --release 17 -Xlint:all -d "$out/test-classes" -cp "$out/classes:$junit" \
  $(find "$here/src/test/java" -name '*.java')
[ "$1" = test ] || exit 0
shift
cd "$here"  # the tests find clients/testing and the CMakeLists.txt from here
# What a test's own processes run on (the launcher's class path is its jar alone).
export SNOWFLAKED_TEST_CLASSPATH="$out/classes:$out/test-classes"
selectors=("$@")
[ ${#selectors[@]} -gt 0 ] || selectors=(--select-package snowflaked.client)
exec java -jar "$junit" --disable-banner --disable-ansi-colors --details=tree --fail-if-no-tests \
  -cp "$out/classes:$out/test-classes" "${selectors[@]}"
