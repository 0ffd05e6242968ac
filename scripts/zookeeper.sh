#!/usr/bin/env bash
# A local ZooKeeper for development, from Debian's `zookeeper` package:
#   scripts/zookeeper.sh start [standalone|ensemble]   start (idempotent)
#   scripts/zookeeper.sh stop                          stop what start started
#   scripts/zookeeper.sh status                        each server's mode
# standalone: 127.0.0.1:2181. ensemble: three servers on 127.0.0.1:2181-2183.
# Data and logs live in .local/zookeeper/ (ZK_DIR to change; ZK_PORT for the
# first client port). Servers listen on loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${ZK_DIR:-$PWD/.local/zookeeper}"
base_port="${ZK_PORT:-2181}"
classpath=/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar

ask() {  # ask PORT WORD: a four-letter command's answer, or nothing
  { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 0
  printf '%s' "$2" >&3
  timeout 2 cat <&3 || true
  exec 3<&-
}

write_config() {  # write_config N COUNT
  local n=$1 count=$2 d="$dir/$1"
  mkdir -p "$d/data"
  {
    echo "tickTime=500"
    echo "initLimit=10"
    echo "syncLimit=5"
    echo "dataDir=$d/data"
    echo "clientPort=$((base_port + n - 1))"
    echo "clientPortAddress=127.0.0.1"
    echo "admin.enableServer=false"
    echo "4lw.commands.whitelist=ruok,srvr,stat,mntr"
    if [ "$count" -gt 1 ]; then
      for i in $(seq 1 "$count"); do
        echo "server.$i=127.0.0.1:$((base_port + 1000 + i)):$((base_port + 2000 + i))"
      done
    fi
  } >"$d/zoo.cfg"
  echo "$n" >"$d/data/myid"
}

start() {
  local mode="${1:-standalone}" count=1
  [ "$mode" = ensemble ] && count=3
  [ "$mode" = standalone ] || [ "$mode" = ensemble ] || { echo "mode: standalone or ensemble" >&2; exit 2; }
  [ -x /usr/bin/java ] && [ -f /usr/share/java/zookeeper.jar ] ||
    { echo "ZooKeeper is not installed: run scripts/install-deps.sh" >&2; exit 1; }
  for n in $(seq 1 "$count"); do
    local d="$dir/$n"
    if [ -f "$d/pid" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null; then continue; fi
    write_config "$n" "$count"
    # Its own session: a Ctrl-C meant for the daemon in the foreground must
    # not stop ZooKeeper before the daemon has given its worker ID back.
    setsid nohup java -Xmx256m -cp "$classpath" org.apache.zookeeper.server.quorum.QuorumPeerMain \
      "$d/zoo.cfg" >"$d/zookeeper.log" 2>&1 &
    echo $! >"$d/pid"
  done
  for n in $(seq 1 "$count"); do
    local port=$((base_port + n - 1)) deadline=$((SECONDS + 60))
    # An ensemble member answers "imok" before a quorum forms; wait for a mode.
    until ask "$port" srvr | grep -q '^Mode:'; do
      if [ $SECONDS -gt $deadline ]; then
        echo "ZooKeeper on port $port did not start; see $dir/$n/zookeeper.log" >&2
        exit 1
      fi
      sleep 0.2
    done
  done
  echo "ZooKeeper ($mode) on $(hosts "$count")"
}

hosts() {
  local out=""
  for n in $(seq 1 "$1"); do out="${out:+$out,}127.0.0.1:$((base_port + n - 1))"; done
  echo "$out"
}

stop() {
  for pidfile in "$dir"/*/pid; do
    [ -f "$pidfile" ] || continue
    local pid
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
  done
}

status() {
  for n in 1 2 3; do
    [ -f "$dir/$n/pid" ] || continue
    local port=$((base_port + n - 1))
    echo "127.0.0.1:$port $(ask "$port" srvr | grep '^Mode:' || echo 'not answering')"
  done
}

case "${1:-}" in
  start) start "${2:-standalone}" ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start [standalone|ensemble] | stop | status" >&2; exit 2 ;;
esac
