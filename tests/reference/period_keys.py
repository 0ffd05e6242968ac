"""Period keys against Python's zoneinfo, a reading of the same tzdata that
no one here wrote: for every hour of 2026 and 2027 (and a day either side)
in each zone below, daily, monthly and yearly, the period snowflaked's
PeriodRule (cctz) finds is the local date zoneinfo gives, and its bounds
are where zoneinfo's local date changes:

- begins: the local date is the period's there, and before it an earlier one;
- next_begins: the local date is a later one there, and the period's just
  before it;
- ends (the last instant the period can be current): not before
  next_begins, the period's just before it, a later one from it on; and
  every hour sampled in the period lies in [begins, ends).

The zones: the issue's five (Europe/Berlin, America/New_York, Asia/Shanghai,
Australia/Lord_Howe with its 30-minute DST shift, UTC) and those whose clock
steps at midnight: America/Havana (midnight skipped in March, repeated in
November), America/Santiago and Africa/Cairo (midnight skipped), and
Atlantic/Azores (both). Day lengths are checked too: 23 and 25 hours where
the zone has DST, 23.5 and 24.5 at Lord Howe, 24 only in Shanghai and UTC.

Usage: period_keys.py PERIOD_TABLE
"""

import datetime as dt
import subprocess
import sys
import zoneinfo

TABLE = sys.argv[1]
UTC = dt.timezone.utc
FROM = int(dt.datetime(2025, 12, 31, tzinfo=UTC).timestamp())
TO = int(dt.datetime(2028, 1, 2, tzinfo=UTC).timestamp())
ZONES = ["Europe/Berlin", "America/New_York", "Asia/Shanghai", "Australia/Lord_Howe", "UTC",
         "America/Havana", "America/Santiago", "Africa/Cairo", "Atlantic/Azores"]
# Day lengths in hours each zone must show (of those that begin in 2026-2027).
DAY_HOURS = {"Europe/Berlin": {23, 24, 25}, "America/New_York": {23, 24, 25},
             "Asia/Shanghai": {24}, "UTC": {24}, "Australia/Lord_Howe": {23.5, 24, 24.5},
             "America/Havana": {23, 24, 25}, "America/Santiago": {23, 24, 25},
             "Africa/Cairo": {23, 24, 25}, "Atlantic/Azores": {23, 24, 25}}
failures = []


def key(zone, reset, unix_s):
    d = dt.datetime.fromtimestamp(unix_s, zone).date()
    return {"daily": f"{d.year:04d}-{d.month:02d}-{d.day:02d}",
            "monthly": f"{d.year:04d}-{d.month:02d}", "yearly": f"{d.year:04d}"}[reset]


def check_bounds(name, zone, reset, k, begins, next_begins, ends):
    def at(ms):
        return key(zone, reset, ms // 1000)
    where = f"{name} {reset} {k}"
    if at(begins) != k or not at(begins - 1000) < k:
        failures.append(f"{where}: begins {begins}: {at(begins - 1000)} then {at(begins)}")
    if not at(next_begins) > k or at(next_begins - 1000) != k:
        failures.append(f"{where}: next_begins {next_begins}: {at(next_begins - 1000)} then {at(next_begins)}")
    if ends < next_begins or at(ends - 1000) != k or not at(ends) > k:
        failures.append(f"{where}: ends {ends} (next_begins {next_begins})")


def check(name, reset):
    zone = zoneinfo.ZoneInfo(name)
    out = subprocess.run([TABLE, name, reset, str(FROM), str(TO), "3600"], check=True,
                         capture_output=True, text=True).stdout.split("\n")
    periods, hours = {}, 0
    for line in filter(None, out):
        unix_s, k, begins, next_begins, ends = line.split(" ")
        unix_s, bounds = int(unix_s), (int(begins), int(next_begins), int(ends))
        hours += 1
        want = key(zone, reset, unix_s)
        if k != want:
            failures.append(f"{name} {reset}: at {unix_s} period {k}, zoneinfo says {want}")
            continue
        if not bounds[0] <= unix_s * 1000 < bounds[2]:
            failures.append(f"{name} {reset}: {unix_s} outside its period {k} {bounds}")
        if periods.setdefault(k, bounds) != bounds:
            failures.append(f"{name} {reset} {k}: bounds {bounds}, earlier {periods[k]}")
    for k, bounds in periods.items():
        check_bounds(name, zone, reset, k, *bounds)
    if reset == "daily":
        lengths = {(nb - b) / 3_600_000 for k, (b, nb, _) in periods.items() if "2026" <= k < "2028"}
        if lengths != DAY_HOURS[name]:
            failures.append(f"{name}: day lengths {sorted(lengths)} h, expected {sorted(DAY_HOURS[name])}")
    if hours != (TO - FROM) // 3600:
        failures.append(f"{name} {reset}: {hours} lines for {(TO - FROM) // 3600} hours")
    return hours, len(periods)


def main():
    total = 0
    for name in ZONES:
        for reset in ("daily", "monthly", "yearly"):
            hours, count = check(name, reset)
            total += hours
            print(f"period_keys: {name} {reset}: {hours} hours, {count} periods")
    for refused in ("Mars/Olympus_Mons", "Europe", "../etc/passwd", "localtime", ""):
        if subprocess.run([TABLE, refused, "daily", "0", "1", "1"], capture_output=True).returncode != 2:
            failures.append(f"zone {refused!r} was not refused")
    for f in failures[:40]:
        print(f"FAIL: {f}")
    if failures:
        print(f"period_keys: {len(failures)} failures")
        return 1
    print(f"period_keys: {total} instants in {len(ZONES)} zones agree with zoneinfo")
    return 0


if __name__ == "__main__":
    sys.exit(main())
