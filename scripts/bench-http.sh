#!/usr/bin/env bash
# HTTP benchmark: snowflaked (static mode, 1 io thread) against an nginx
# baseline (1 worker answering `return 200` with a JSON body of the same size),
# both driven by wrk with the same threads and connections, in one run.
#   single IDs : req/s and p50/p99 latency of each, and the ratio
#                (goals: >= 0.9 x nginx, p99 <= 1 ms at c=64)
#   batch      : GET /id/<tag>?count=1000, IDs/s (goal: >= 3,000,000)
# Usage: scripts/bench-http.sh [seconds per run, default 10] [connections, default 64]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10}
connections=${2:-64}

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

free_port() {  # a loopback port nobody listens on
  local port
  for _ in $(seq 1 100); do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
  done
  echo "no free port found" >&2; exit 1
}

wait_for() {  # wait_for URL: polls until it answers, 10 s at most
  for _ in $(seq 1 200); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "no answer from $1" >&2; exit 1
}

# snowflaked: static worker, one io thread, a port of the system's choosing.
cat > "$work/snowflaked.json" <<JSON
{"log_level": "warn", "coordinator": {"type": "static", "static_worker_id": 1},
 "http": {"io_threads": 1}}
JSON
build/bench/snowflaked --config "$work/snowflaked.json" --listen 127.0.0.1:0 \
  --log-level info 2>"$work/snowflaked.log" &
pids+=($!)
for _ in $(seq 1 200); do grep -q "listening on" "$work/snowflaked.log" && break; sleep 0.05; done
sf_port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$work/snowflaked.log")
[ -n "$sf_port" ] || { cat "$work/snowflaked.log"; exit 1; }
sf="http://127.0.0.1:$sf_port"
wait_for "$sf/health"

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
}
rps() { awk '/^Requests\/sec/ {print $2}' "$work/$1.txt"; }
# Latency percentile from wrk's distribution, in ms.
pct() {
  awk -v p="$2" '$1 == p"%" {
      v = $2; unit = v; gsub(/[0-9.]/, "", unit); sub(/[a-z]+$/, "", v);
      if (unit == "us") v /= 1000; else if (unit == "s") v *= 1000; printf "%.3f", v }' "$work/$1.txt"
}
errors() { awk '/Non-2xx|Socket errors/ {print}' "$work/$1.txt"; }

echo "warming up..."
wrk -t1 -c"$connections" -d2s "$sf/id/order" >/dev/null
wrk -t1 -c"$connections" -d2s "$ng/id/order" >/dev/null

run nginx "$ng/id/order"
run single "$sf/id/order"
run batch "$sf/id/order?count=1000"

for name in nginx single batch; do
  if [ -n "$(errors $name)" ]; then echo "$name: $(errors $name)" >&2; exit 1; fi
done

nginx_rps=$(rps nginx); single_rps=$(rps single); batch_rps=$(rps batch)
echo
echo "snowflaked HTTP benchmark: wrk -t1 -c$connections -d${duration}s, 1 io thread vs nginx 1 worker"
printf '%-34s %12s %10s %10s\n' "case" "req/s" "p50 ms" "p99 ms"
printf '%-34s %12.0f %10s %10s\n' "nginx return 200 (baseline)" "$nginx_rps" "$(pct nginx 50)" "$(pct nginx 99)"
printf '%-34s %12.0f %10s %10s\n' "snowflaked GET /id/order" "$single_rps" "$(pct single 50)" "$(pct single 99)"
printf '%-34s %12.0f %10s %10s\n' "snowflaked GET /id/order?count=1000" "$batch_rps" "$(pct batch 50)" "$(pct batch 99)"
echo
awk -v s="$single_rps" -v n="$nginx_rps" -v p99="$(pct single 99)" -v b="$batch_rps" 'BEGIN {
  r = s / n; ids = b * 1000;
  printf "goal: single-ID throughput >= 0.9 x nginx: %.3f  %s\n", r, (r >= 0.9 ? "met" : "NOT MET");
  printf "goal: single-ID p99 <= 1 ms: %.3f ms  %s\n", p99, (p99 <= 1.0 ? "met" : "NOT MET");
  printf "goal: batch >= 3,000,000 IDs/s: %.0f IDs/s  %s\n", ids, (ids >= 3000000 ? "met" : "NOT MET");
}'
