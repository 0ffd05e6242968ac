#!/usr/bin/env bash
# CPack's .deb of a build tree: its control data and contents, apt resolving
# its dependencies on this Debian 12, and dpkg installing, reinstalling over
# an edited config, and purging it — in a scratch root (dpkg --root), so the
# machine's own packages are never touched.
# Usage: deb_test.sh BUILD_DIR
set -euo pipefail
build=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cpack --config "$build/CPackConfig.cmake" -B "$scratch/pkg" >/dev/null
deb=$(echo "$scratch"/pkg/snowflaked_*_"$(dpkg --print-architecture)".deb)
[ -f "$deb" ] || fail "cpack made no snowflaked_*.deb"

[ "$(dpkg-deb -f "$deb" Package)" = snowflaked ] || fail "Package is not snowflaked"
deb_version=$(dpkg-deb -f "$deb" Version)
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libc6 libstdc++6 libzookeeper-mt2 libsystemd0 libboost-program-options1.74.0 \
           libspdlog1.10 libssl3 libcctz2 tzdata; do
  [[ ", $depends" == *", $lib"* ]] || fail "Depends lacks $lib: $depends"
done
[ "$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)" = /etc/snowflaked/snowflaked.json ] \
  || fail "conffiles is not /etc/snowflaked/snowflaked.json"
contents=$(dpkg-deb -c "$deb" | awk '$6 !~ /\/$/ {print $6}' | sort | tr '\n' ' ')
expected="./etc/snowflaked/snowflaked.json ./usr/bin/snowflaked ./usr/lib/systemd/system/snowflaked.service ./usr/share/doc/snowflaked/CHANGELOG.md ./usr/share/doc/snowflaked/README.md ./usr/share/doc/snowflaked/copyright ./usr/share/doc/snowflaked/docs/api.md ./usr/share/doc/snowflaked/docs/configuration.md ./usr/share/doc/snowflaked/docs/design.md ./usr/share/doc/snowflaked/docs/migration.md ./usr/share/doc/snowflaked/docs/monitoring.md ./usr/share/doc/snowflaked/docs/operations.md "
[ "$contents" = "$expected" ] || fail "contents: $contents"
# An open-source license users can adopt: Apache-2.0, as LICENSE at the top says.
copyright=$(dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/snowflaked/copyright)
grep -qx 'License: Apache-2.0' <<<"$copyright" || fail "copyright does not name Apache-2.0: $copyright"
cmp -s "$(dirname "$0")/../../LICENSE" /usr/share/common-licenses/Apache-2.0 \
  || fail "LICENSE is not the Apache License 2.0's text"

# apt, against this machine's package database: every dependency resolves.
simulated=$(apt-get install --simulate "$deb" 2>&1) || fail "apt-get --simulate: $simulated"
grep -q '^Conf snowflaked' <<<"$simulated" || fail "apt would not configure it: $simulated"

# dpkg for real, into a scratch root. The maintainer scripts run too; they
# see DPKG_ROOT and leave the running system alone.
root=$scratch/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status"
dpkg_root() {
  dpkg --root="$root" --log=/dev/null --force-depends --force-script-chrootless --force-not-root \
    --force-confdef --force-confold "$@" >/dev/null 2>&1
}
dpkg_root -i "$deb" || fail "dpkg -i failed"
dpkg --root="$root" -s snowflaked | grep -qx 'Status: install ok installed' || fail "not installed"
version=$("$root/usr/bin/snowflaked" --version) || fail "the installed binary does not run"
grep -Eqx "snowflaked ${deb_version//./\\.} \(revision ([0-9a-f]{12}(-dirty)?|unknown)\)" <<<"$version" \
  || fail "--version: $version"

echo '# edited by the operator' >>"$root/etc/snowflaked/snowflaked.json"
dpkg_root -i "$deb" || fail "reinstall failed"
grep -q 'edited by the operator' "$root/etc/snowflaked/snowflaked.json" || fail "reinstall replaced an edited conffile"

mkdir -p "$root/var/lib/private/snowflaked" && touch "$root/var/lib/private/snowflaked/worker.json"
dpkg_root --purge snowflaked || fail "purge failed"
[ ! -e "$root/usr/bin/snowflaked" ] && [ ! -e "$root/etc/snowflaked/snowflaked.json" ] \
  && [ ! -e "$root/var/lib/private/snowflaked" ] || fail "purge left files behind"
echo "deb: OK ($(basename "$deb"), Depends: $depends)"
