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
rm -rf "$out/reports"
status=0
java -jar "$junit" --disable-banner --disable-ansi-colors --details=tree --fail-if-no-tests \
  --reports-dir="$out/reports" -cp "$out/classes:$out/test-classes" "${selectors[@]}" || status=$?
# The failed tests and their messages last, one a line: a log cut to its head and tail (CI's)
# still names them.
[ "$status" -eq 0 ] || python3 - "$out/reports" <<'PY'
import glob, sys, xml.etree.ElementTree as ET
for path in glob.glob(sys.argv[1] + "/*.xml"):
    for case in ET.parse(path).iter("testcase"):
        for bad in list(case.findall("failure")) + list(case.findall("error")):
            why = " ".join((bad.get("message") or bad.get("type") or "").split())
            print(f"FAILED {case.get('classname')}.{case.get('name')}: {why[:400]}")
PY
exit "$status"
