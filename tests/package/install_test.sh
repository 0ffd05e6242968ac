#!/usr/bin/env bash
# `cmake --install` of a build tree into scratch roots, then systemd's own
# checks on the unit exactly as installed.
# Usage: install_test.sh BUILD_DIR
set -euo pipefail
build=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Prefix /usr: the package's layout.
root=$scratch/usr-root
DESTDIR=$root cmake --install "$build" --prefix /usr >/dev/null
for f in usr/bin/snowflaked usr/lib/systemd/system/snowflaked.service \
         etc/snowflaked/snowflaked.json usr/share/doc/snowflaked/README.md \
         usr/share/doc/snowflaked/docs/operations.md; do
  [ -f "$root/$f" ] || fail "cmake --install did not install /$f"
done
grep -qx 'ExecStart=/usr/bin/snowflaked --config /etc/snowflaked/snowflaked.json' \
  "$root/usr/lib/systemd/system/snowflaked.service" || fail "ExecStart does not name /usr paths"
"$root/usr/bin/snowflaked" check-config "$root/etc/snowflaked/snowflaked.json" >/dev/null \
  || fail "the installed default config does not validate"

# systemd-analyze --root needs systemd's own units (sysinit.target, ...) there.
cp -an /usr/lib/systemd/system/. "$root/usr/lib/systemd/system/"
verify=$(systemd-analyze verify --root="$root" snowflaked.service 2>&1) \
  || fail "systemd-analyze verify: $verify"
# It reports unknown keys and bad values as warnings with exit 0: none allowed.
[ -z "$verify" ] || fail "systemd-analyze verify warns: $verify"
security=$(systemd-analyze security --offline=yes --root="$root" --threshold=15 snowflaked.service 2>&1) \
  || fail "systemd-analyze security: exposure above 1.5: $(echo "$security" | tail -1)"
echo "$security" | tail -1

# The unit can be enabled (its [Install] section).
systemctl --root="$root" enable snowflaked.service >/dev/null 2>&1
[ -L "$root/etc/systemd/system/multi-user.target.wants/snowflaked.service" ] \
  || fail "systemctl enable made no multi-user.target.wants link"

# Any other prefix: the unit's paths follow it.
other=$scratch/opt-root
DESTDIR=$other cmake --install "$build" --prefix /opt/snowflaked >/dev/null
grep -qx 'ExecStart=/opt/snowflaked/bin/snowflaked --config /opt/snowflaked/etc/snowflaked/snowflaked.json' \
  "$other/opt/snowflaked/lib/systemd/system/snowflaked.service" \
  || fail "with --prefix /opt/snowflaked the unit does not name its paths"
[ -f "$other/opt/snowflaked/etc/snowflaked/snowflaked.json" ] || fail "no config under /opt/snowflaked/etc"
echo "install: OK"
