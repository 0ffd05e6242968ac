#!/usr/bin/env bash
# HTTP benchmark: snowflaked (static mode, 1 io thread) against an nginx
# baseline (1 worker answering `return 200` with a JSON body of the same size),
# both driven by wrk with the same threads and connections, in one run.
#   single IDs : req/s and p50/p99 latency of each, and the ratio
#                (goals: >= 0.9 x nginx, p99 <= 1 ms at c=64)
#   batch      : GET /id/<tag>?count=1000, IDs/s (goal: >= 3,000,000)
#   sequences  : GET /seq/<tag> beside GET /id/<tag> in the same rounds (goal:
#                >= 0.98 x), GET /seq/<tag> of a sequence with a template
#                ('ORD-{n:012}') beside plain /seq (goal: >= 0.95 x), batches
#                of 1000, and the ZooKeeper writes (ranges
#                taken, holder nodes written) per million numbers over a
#                minute at about 50,000 a second from a cold start (wrk
#                paced by a Lua delay), against a real ZooKeeper the script
#                starts (Debian's zookeeper, a free loopback port)
# The machine's speed drifts from minute to minute (a shared VM), so the two
# servers are measured alternately, ROUNDS times each, and medians reported.
#   forms      : GET /id/<tag>?form=opaque and ?form=uuid beside plain IDs in
#                the same rounds (goal: single opaque IDs >= 0.95 x plain),
#                and their batches of 1000 in IDs/s
#   baseline   : with BASELINE_REV=<git revision>, that revision's snowflaked
#                is built too and measured in the same rounds: the ratio says
#                what the changes since cost (e.g. a new metric per request)
# Usage: scripts/bench-http.sh [seconds per run, default 5] [connections, default 64]
#        ROUNDS=5 scripts/bench-http.sh
#        BASELINE_REV=HEAD~1 scripts/bench-http.sh
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-5}
connections=${2:-64}
rounds=${ROUNDS:-5}
baseline_rev=${BASELINE_REV:-}

bash scripts/install-deps.sh >/dev/null
bash scripts/build.sh build/bench -DCMAKE_BUILD_TYPE=Release -DSNOWFLAKE_BUILD_TESTS=OFF \
  -DSNOWFLAKE_BUILD_BENCH=ON >/dev/null

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {  # a loopback port nothing has bound, as the kernel picks one
  # (a connect test alone misses a port held as an outgoing connection's
  # local address: the daemon's ZooKeeper session had nginx's once)
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_for() {  # wait_for URL: polls until it answers, 10 s at most
  for _ in $(seq 1 200); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "no answer from $1" >&2; exit 1
}

# A ZooKeeper for the sequences: standalone, fast ticks, its own data dir.
zk_port=$(free_port)
mkdir -p "$work/zk-data"
cat > "$work/zoo.cfg" <<ZOO
tickTime=100
dataDir=$work/zk-data
clientPort=$zk_port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr
ZOO
java -Xmx256m -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar \
  org.apache.zookeeper.server.quorum.QuorumPeerMain "$work/zoo.cfg" >"$work/zk.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
  [ "$(exec 3<>"/dev/tcp/127.0.0.1/$zk_port" && printf ruok >&3 && head -c 4 <&3)" = imok ] && break
  sleep 0.1
done

# start_snowflaked BINARY NAME: static worker, one io thread, a port of the
# system's choosing, sequences from the ZooKeeper above; sets $url.
openssl rand -hex 32 > "$work/opaque.key"
start_snowflaked() {
  # The baseline may predate the forms section: only this tree's gets one.
  local forms=""
  [ "$2" = snowflaked ] && forms=", \"forms\": {\"opaque_key_file\": \"$work/opaque.key\"}"
  cat > "$work/$2.json" <<JSON
{"log_level": "warn",
 "coordinator": {"type": "static", "static_worker_id": 1, "state_dir": "$work/$2-state"},
 "zookeeper": {"hosts": "127.0.0.1:$zk_port", "root": "/bench/$2"},
 "sequences": {"enabled": true},
 "http": {"io_threads": 1}$forms}
JSON
  "$1" --config "$work/$2.json" --listen 127.0.0.1:0 --log-level info 2>"$work/$2.log" &
  pids+=($!)
  for _ in $(seq 1 200); do grep -q "listening on" "$work/$2.log" && break; sleep 0.05; done
  local port
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$work/$2.log")
  [ -n "$port" ] || { cat "$work/$2.log"; exit 1; }
  url="http://127.0.0.1:$port"
  wait_for "$url/health"
}
start_snowflaked build/bench/snowflaked snowflaked
sf=$url
build/bench/snowflaked seq create order --start 1 --config "$work/snowflaked.json" >/dev/null
build/bench/snowflaked seq create paced --start 1 --config "$work/snowflaked.json" >/dev/null
build/bench/snowflaked seq create printed --template 'ORD-{n:012}' --config "$work/snowflaked.json" >/dev/null
wait_for "$sf/seq/order"
wait_for "$sf/seq/printed"
if [ -n "$baseline_rev" ]; then
  # The baseline's sources from git (committed state only), built alike.
  rm -rf build/bench-baseline-src && mkdir -p build/bench-baseline-src
  git archive "$baseline_rev" | tar -x -C build/bench-baseline-src
  cmake -S build/bench-baseline-src -B build/bench-baseline -DCMAKE_BUILD_TYPE=Release \
    -DSNOWFLAKE_BUILD_TESTS=OFF >/dev/null
  cmake --build build/bench-baseline -j"$(nproc)" --target snowflaked >/dev/null
  start_snowflaked build/bench-baseline/snowflaked baseline
  base=$url
fi

# nginx: one worker, the same body size as a single-ID answer.
body=$(curl -fsS "$sf/id/order")
ng_port=$(free_port)
mkdir -p "$work/nginx"
cat > "$work/nginx/nginx.conf" <<NGINX
daemon off;
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  server {
    listen 127.0.0.1:$ng_port;
    location / { default_type application/json; return 200 '$body'; }
  }
}
NGINX
nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" &
pids+=($!)
ng="http://127.0.0.1:$ng_port"
wait_for "$ng/id/order"
[ "$(curl -fsS "$ng/id/order" | wc -c)" = "${#body}" ] || { echo "nginx body size differs" >&2; exit 1; }

# run NAME URL: wrk output kept in $work/NAME.txt
run() {
  wrk -t1 -c"$connections" -d"${duration}s" --latency "$2" > "$work/$1.txt"
  if grep -qE "Non-2xx|Socket errors" "$work/$1.txt"; then
    echo "$1: $(grep -E 'Non-2xx|Socket errors' "$work/$1.txt")" >&2; exit 1
  fi
}
rps() { awk '/^Requests\/sec/ {print $2}' "$work/$1.txt"; }
# Latency percentile from wrk's distribution, in ms.
pct() {
  awk -v p="$2" '$1 == p"%" {
      v = $2; unit = v; gsub(/[0-9.]/, "", unit); sub(/[a-z]+$/, "", v);
      if (unit == "us") v /= 1000; else if (unit == "s") v *= 1000; printf "%.3f\n", v }' "$work/$1.txt"
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# ratio A B ROUND: req/s of run A over run B in that round
ratio_of() { awk -v a="$(rps "$1.$3")" -v b="$(rps "$2.$3")" 'BEGIN {print a / b}'; }
# per_round TITLE LABEL_B B LABEL_A A: each round's req/s of both and A / B
per_round() {
  echo "$1, per round:"
  for r in $(seq 1 "$rounds"); do
    printf '  round %d: %s %8.0f req/s, %s %8.0f req/s, ratio %.3f\n' "$r" "$2" "$(rps "$3.$r")" \
      "$4" "$(rps "$5.$r")" "$(ratio_of "$5" "$3" "$r")"
  done
}
# median_ratio A B: the median over the rounds of A / B
median_ratio() { for r in $(seq 1 "$rounds"); do ratio_of "$1" "$2" "$r"; done | median; }
# stat NAME FIELD: median over the rounds of rps, p50 or p99
stat() {
  for r in $(seq 1 "$rounds"); do
    case $2 in rps) rps "$1.$r" ;; *) pct "$1.$r" "$2" ;; esac
  done | median
}

echo "warming up..."
wrk -t1 -c"$connections" -d2s "$sf/id/order" >/dev/null
wrk -t1 -c"$connections" -d2s "$sf/seq/order" >/dev/null
wrk -t1 -c"$connections" -d2s "$sf/seq/printed" >/dev/null
wrk -t1 -c"$connections" -d2s "$ng/id/order" >/dev/null

# CPU time the hypervisor gave to others while we ran ("steal"): when it is
# high the machine was contended and every figure is noisier.
cpu_ticks() { awk '/^cpu / {t = 0; for (i = 2; i <= 9; i++) t += $i; print $9, t}' /proc/stat; }
read -r steal0 total0 < <(cpu_ticks)
for r in $(seq 1 "$rounds"); do
  echo "round $r of $rounds..."
  run "nginx.$r" "$ng/id/order"
  run "single.$r" "$sf/id/order"
  [ -z "$baseline_rev" ] || run "base.$r" "$base/id/order"
  run "batch.$r" "$sf/id/order?count=1000"
  run "seq.$r" "$sf/seq/order"
  run "seqprinted.$r" "$sf/seq/printed"
  run "seqbatch.$r" "$sf/seq/order?count=1000"
  run "opaque.$r" "$sf/id/order?form=opaque"
  run "uuid.$r" "$sf/id/order?form=uuid"
  run "opaquebatch.$r" "$sf/id/order?form=opaque&count=1000"
  run "uuidbatch.$r" "$sf/id/order?form=uuid&count=1000"
done

# ZooKeeper writes per million numbers at a steady 50,000 a second, from a
# cold start: the tag "paced" has never been asked for, so the window holds
# everything a daemon writes for it: the first range (the tag's step), the
# ranges that grow as the measured rate settles, this run's holder node
# naming each, and the holder node's refresh once a minute. ZooKeeper's own
# count of writes (its zxid, from `srvr`) says how many there were. The pace:
# each connection waits 1 ms after each answer; a 3 s try with 150
# connections measures the cycle, and the connections are set for 50,000 a
# second from it. Steady state, later: a range lasts segment_duration_s
# (900 s) at the rate, so its two writes spread over 45 million numbers.
zxid() {
  local hex
  hex=$( (exec 3<>"/dev/tcp/127.0.0.1/$zk_port" && printf srvr >&3 && cat <&3) | awk '/^Zxid:/ {print $2}')
  echo $((hex))
}
metric() { curl -fsS "$sf/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
cat > "$work/paced.lua" <<'LUA'
function delay() return 1 end
LUA
paced_seconds=60
echo "paced sequence load: calibrating..."
wrk -t1 -c150 -d3s -s "$work/paced.lua" "$sf/id/calibration" > "$work/paced-try.txt"
paced_connections=$(awk '/^Requests\/sec/ {c = int(150 * 50000 / $2 + 0.5); print (c < 1 ? 1 : c)}' "$work/paced-try.txt")
echo "paced sequence load: $paced_connections connections, ${paced_seconds} s from a cold start..."
cold_zxid=$(zxid)
wrk -t1 -c"$paced_connections" -d"${paced_seconds}s" -s "$work/paced.lua" "$sf/seq/paced" > "$work/paced.txt"
paced_writes=$(( $(zxid) - cold_zxid ))
paced_rps=$(awk '/^Requests\/sec/ {print $2}' "$work/paced.txt")
paced_numbers=$(metric 'snowflake_seq_numbers_total{tag="paced"}')
paced_fetches=$(metric 'snowflake_seq_fetches_total{tag="paced"}')
paced_step=$(metric 'snowflake_seq_step{tag="paced"}')

read -r steal1 total1 < <(cpu_ticks)
steal_pct=$(awk -v s=$((steal1 - steal0)) -v t=$((total1 - total0)) 'BEGIN {printf "%.1f", t ? 100 * s / t : 0}')

echo
echo "snowflaked HTTP benchmark: wrk -t1 -c$connections, ${duration}s runs, median of $rounds alternating rounds"
echo "CPU steal during the runs: ${steal_pct}% of CPU time"
per_round "1 io thread vs nginx 1 worker" nginx nginx snowflaked single
printf '%-38s %12s %10s %10s\n' "case (medians)" "req/s" "p50 ms" "p99 ms"
printf '%-38s %12.0f %10s %10s\n' "nginx return 200 (baseline)" "$(stat nginx rps)" "$(stat nginx 50)" "$(stat nginx 99)"
printf '%-38s %12.0f %10s %10s\n' "snowflaked GET /id/order" "$(stat single rps)" "$(stat single 50)" "$(stat single 99)"
printf '%-38s %12.0f %10s %10s\n' "snowflaked GET /id/order?count=1000" "$(stat batch rps)" "$(stat batch 50)" "$(stat batch 99)"
printf '%-38s %12.0f %10s %10s\n' "snowflaked GET /seq/order" "$(stat seq rps)" "$(stat seq 50)" "$(stat seq 99)"
printf '%-38s %12.0f %10s %10s\n' "snowflaked GET /seq/order?count=1000" "$(stat seqbatch rps)" "$(stat seqbatch 50)" "$(stat seqbatch 99)"
printf '%-38s %12.0f %10s %10s\n' "snowflaked GET /seq/printed" "$(stat seqprinted rps)" "$(stat seqprinted 50)" "$(stat seqprinted 99)"
per_round "sequences vs IDs, single requests" /id single /seq seq
per_round "printed sequence vs plain, single requests" plain seq printed seqprinted
printf '%-38s %12.0f %10s %10s\n' "snowflaked GET /id/order?form=opaque" "$(stat opaque rps)" "$(stat opaque 50)" "$(stat opaque 99)"
printf '%-38s %12.0f %10s %10s\n' "snowflaked GET /id/order?form=uuid" "$(stat uuid rps)" "$(stat uuid 50)" "$(stat uuid 99)"
per_round "opaque IDs vs plain, single requests" plain single opaque opaque
per_round "UUIDs vs plain IDs, single requests" plain single uuid uuid
printf 'paced sequence load from a cold start: %.0f req/s for %d s (%d connections): %s numbers, %s ranges taken, %s ZooKeeper writes in all; the last range, %s numbers, lasts %.0f s at this rate\n' \
  "$paced_rps" "$paced_seconds" "$paced_connections" "$paced_numbers" "$paced_fetches" "$paced_writes" "$paced_step" \
  "$(awk -v s="$paced_step" -v r="$paced_rps" 'BEGIN {print (r > 0 ? s / r : 0)}')"
if [ -n "$baseline_rev" ]; then
  printf '%-38s %12.0f %10s %10s\n' "baseline $baseline_rev GET /id/order" "$(stat base rps)" "$(stat base 50)" "$(stat base 99)"
  per_round "this tree vs $baseline_rev, single IDs" baseline base "this tree" single
  base_ratio=$(median_ratio single base)
  awk -v r="$base_ratio" -v rev="$baseline_rev" 'BEGIN {
    printf "cost of the changes since %s: %.1f %% of single-ID throughput (median of per-round ratios %.3f)\n", rev, 100 * (1 - r), r }'
fi
echo
ratio=$(median_ratio single nginx)
awk -v r="$ratio" -v p99="$(stat single 99)" -v np99="$(stat nginx 99)" -v b="$(stat batch rps)" 'BEGIN {
  ids = b * 1000;
  printf "goal: single-ID throughput >= 0.9 x nginx (median of per-round ratios): %.3f  %s\n", r, (r >= 0.9 ? "met" : "NOT MET");
  printf "goal: single-ID p99 <= 1 ms: %.3f ms  %s (nginx baseline p99: %.3f ms)\n", p99, (p99 <= 1.0 ? "met" : "NOT MET"), np99;
  printf "goal: batch >= 3,000,000 IDs/s: %.0f IDs/s  %s\n", ids, (ids >= 3000000 ? "met" : "NOT MET");
}'
opaque_ratio=$(median_ratio opaque single)
uuid_ratio=$(median_ratio uuid single)
awk -v o="$opaque_ratio" -v u="$uuid_ratio" -v b="$(stat batch rps)" -v ob="$(stat opaquebatch rps)" \
    -v ub="$(stat uuidbatch rps)" 'BEGIN {
  printf "goal: single opaque IDs >= 0.95 x plain (median of per-round ratios): %.3f  %s; UUIDs: %.3f\n", o, (o >= 0.95 ? "met" : "NOT MET"), u;
  printf "batches of 1000, IDs/s: plain %.0f, opaque %.0f (%.2f x), uuid %.0f (%.2f x)\n", b * 1000, ob * 1000, ob / b, ub * 1000, ub / b;
}'
seq_ratio=$(median_ratio seq single)
printed_ratio=$(median_ratio seqprinted seq)
awk -v r="$printed_ratio" 'BEGIN {
  printf "goal: GET /seq with a template >= 0.95 x plain GET /seq (median of per-round ratios): %.3f  %s\n", r, (r >= 0.95 ? "met" : "NOT MET");
}'
awk -v r="$seq_ratio" -v sb="$(stat seqbatch rps)" -v b="$(stat batch rps)" -v n="$paced_numbers" -v f="$paced_writes" 'BEGIN {
  printf "goal: GET /seq >= 0.98 x GET /id (median of per-round ratios): %.3f  %s\n", r, (r >= 0.98 ? "met" : "NOT MET");
  printf "sequence batches: %.0f numbers/s (%.2f x ID batches)\n", sb * 1000, sb / b;
  w = n > 0 ? f * 1e6 / n : 0;
  printf "goal: ZooKeeper writes per million numbers at about 50,000/s, a cold start included, < 10: %.2f  %s\n", w, (w < 10 ? "met" : "NOT MET");
}'
