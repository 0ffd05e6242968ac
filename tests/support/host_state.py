"""Keeps what a test or benchmark starts out of the host's state directory.

A config that names no coordinator.state_dir falls back to systemd's
$STATE_DIRECTORY, then to /var/lib/snowflaked: on a host with the .deb
installed, or where a daemon once ran with the default config, a test's
throwaway cluster would be recorded there, and every later `cluster create`
of a test refused (exit 3). Importing this module points $STATE_DIRECTORY,
for every process started from here on, at a directory that cannot exist
(under /proc, even for root): a daemon of such a config fails to start,
saying so, and a command finds no state directory; neither touches the
host's. C++ tests get the same from ChildProcess (child_process.cpp).
"""

import os

NO_STATE_DIRECTORY = "/proc/snowflake-tests-name-coordinator.state_dir"

os.environ.setdefault("STATE_DIRECTORY", NO_STATE_DIRECTORY)
