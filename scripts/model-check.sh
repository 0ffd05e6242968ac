#!/usr/bin/env bash
# Checks model/ (the worker-ID protocol, the sequences' ranges and their
# raise, in Promela) with spin, exhaustively:
#   - the recycle pool, the sequential strategy, a sequence's ranges and its
#     raise, a strict sequence's owner: no
#     counterexample to the safety properties, and every statement of the
#     daemon reached;
#   - liveness under weak fairness: no acceptance cycle (a free worker ID is
#     claimed; a stale one is reaped, the reaper dying or not);
#   - each mutant (one safety rule taken out): spin must find a
#     counterexample, whose story (the trail's steps) is kept; a liveness
#     mutant ("cycle"): an acceptance cycle, its story kept likewise.
# Prints states, depth, memory and time of every check; exits 1 when one
# check does not end as it must. Installs spin (Debian's package) if missing.
#
#   scripts/model-check.sh [--ticks N] [--faults N] [--out DIR] [--story NAME]
#                          [--only REGEX]
#
# --ticks and --faults bound the model (defaults: 5 ticks of real time, 2
# faults); --story NAME prints the counterexample of a mutant afterwards
# (e.g. --story no-time-fence); --only REGEX runs only the checks whose
# name matches (e.g. --only '^lost-data').
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

ticks=5
faults=2
out=build/model
story=
only=
while [ $# -gt 0 ]; do
  case "$1" in
    --ticks) ticks=$2; shift 2 ;;
    --faults) faults=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --story) story=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "model-check: unknown argument $1" >&2; exit 2 ;;
  esac
done

if ! command -v spin >/dev/null || ! command -v gcc >/dev/null; then
  SUDO=()
  [ "$(id -u)" -ne 0 ] && SUDO=(sudo)
  echo "model-check: installing spin"
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -qq
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends spin gcc libc6-dev >/dev/null
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)

# name | expect | spin defines [| model file, snowflake.pml if none [| hash
# table bits, 24 if none: 2^24 slots, 128 MB]. "violates
# N": a counterexample to property N of model/README.md (1: a duplicate, 2: an
# ID at its floor, 3: issuing cut off past the lease, 5: an ID at or below the
# migration floor once `pool floor` exited 0, 6: a sequence's number twice,
# 7: a number at or below a sequence's floor once `seq raise` exited 0, 8: an
# ID or a sequence's number twice across ZooKeeper losing its data, 9: a
# reclaim by a session that does not hold the reaper's role it read under, 10:
# a daemon refused the period its clock is in, 11: a strict sequence's number
# not above one a client had received before it asked, 12: a holder we do
# not run stamping after its worker ID could be given away).
# "live": no acceptance cycle (property 4); "cycle": one (a liveness mutant).
checks=(
  "recycle|clean||snowflake.pml|28"
  "sequential|clean|-DSEQUENTIAL|snowflake.pml|26"
  "liveness|live|-DLIVENESS"
  "reaper-liveness|live|-DLIVENESS -DREAP_LIVENESS"
  "no-time-fence|violates 1|-DNO_TIME_FENCE"
  "takeover-by-token|violates 1|-DTAKEOVER_BY_TOKEN|snowflake.pml|25"
  "unversioned-reclaim|violates 1|-DUNVERSIONED_RECLAIM"
  "claim-without-moves|violates 1|-DCLAIM_WITHOUT_MOVES"
  "heartbeat-without-moves|violates 1|-DHEARTBEAT_WITHOUT_MOVES"
  "mark-before-close|violates 1|-DMARK_BEFORE_CLOSE"
  "released-floor-without-ts|violates 1|-DRELEASED_FLOOR_WITHOUT_TS"
  "no-lease|violates 3|-DNO_LEASE"
  "sequential-floor-without-lease|violates 1|-DSEQUENTIAL -DFLOOR_WITHOUT_LEASE"
  "claim-ignores-floor|violates 5|-DCLAIM_IGNORES_FLOOR"
  "heartbeat-ignores-floor|violates 5|-DHEARTBEAT_IGNORES_FLOOR"
  "sequential-floor-without-confirmation|violates 5|-DSEQUENTIAL -DFLOOR_WITHOUT_CONFIRMATION"
  "sequential-floor-ignores-superseded|violates 5|-DSEQUENTIAL -DFLOOR_IGNORES_SUPERSEDED"
  "reap-without-role|violates 9|-DREAP_WITHOUT_ROLE"
  "reaper-outlives-session|cycle|-DLIVENESS -DREAP_LIVENESS -DREAPER_OUTLIVES_SESSION"
  "sequence|clean||sequence.pml|25"
  "sequence-data-equality|violates 6|-DDATA_EQUALITY|sequence.pml"
  "sequence-unversioned-give-back|violates 6|-DUNVERSIONED_GIVE_BACK|sequence.pml"
  "sequence-raise|clean||sequence_raise.pml|24"
  "sequence-raise-floor-read-first|violates 7|-DREAD_FLOOR_FIRST|sequence_raise.pml"
  "sequence-raise-ack-before-drop|violates 7|-DACK_BEFORE_DROP|sequence_raise.pml"
  "sequence-raise-ephemeral-holder|violates 7|-DEPHEMERAL_HOLDER|sequence_raise.pml"
  "sequence-raise-ack-before-replies|violates 7|-DACK_BEFORE_REPLIES|sequence_raise.pml"
  "sequence-raise-from-without-drain|violates 7|-DFROM_WITHOUT_DRAIN|sequence_raise.pml"
  "lost-data|clean||lost_data.pml|27"
  "lost-data-sequences|clean|-DSEQUENCES|lost_data.pml"
  "lost-data-no-fence|violates 8|-DNO_FENCE|lost_data.pml"
  "lost-data-unfenced-genesis|violates 8|-DUNFENCED_GENESIS|lost_data.pml"
  "lost-data-restore-without-command|violates 8|-DRESTORE_WITHOUT_COMMAND|lost_data.pml"
  "lost-data-no-freeze|violates 8|-DSEQUENCES -DNO_FREEZE|lost_data.pml"
  "lost-data-sequences-restore-without-command|violates 8|-DSEQUENCES -DRESTORE_WITHOUT_COMMAND|lost_data.pml"
  "lost-data-no-grace|violates 8|-DNO_GRACE|lost_data.pml"
  "lost-data-sequences-no-grace|violates 8|-DSEQUENCES -DNO_GRACE|lost_data.pml"
  "lost-data-vouch-any-run|violates 8|-DVOUCH_ANY_RUN|lost_data.pml"
  "lost-data-vouch-any-connection|violates 8|-DVOUCH_ANY_CONNECTION|lost_data.pml"
  "lost-data-sequences-vouch-any-run|violates 8|-DSEQUENCES -DVOUCH_ANY_RUN|lost_data.pml"
  "lost-data-create-forgets|violates 8|-DCREATE_FORGETS|lost_data.pml"
  "lost-data-raise-thaws-newer-freeze|violates 8|-DSEQUENCES -DRAISE_THAWS_NEWER_FREEZE|lost_data.pml"
  "period|clean||period.pml|25"
  "period-create-without-check|violates 6|-DCREATE_WITHOUT_CHECK|period.pml"
  "period-create-overwrites|violates 6|-DCREATE_OVERWRITES|period.pml"
  "period-no-skew-bound|violates 10|-DNO_SKEW_BOUND|period.pml"
  "strict|clean||strict.pml"
  "strict-early-takeover|violates 11|-DEARLY_TAKEOVER|strict.pml"
  "strict-any-run|violates 11|-DANY_RUN|strict.pml"
  "lease|clean||lease.pml|26"
  "lease-deadline-from-answer|violates 12|-DDEADLINE_FROM_ANSWER|lease.pml"
  "lease-reclaim-without-margin|violates 12|-DRECLAIM_WITHOUT_MARGIN|lease.pml"
  "lease-late-without-margin|violates 12|-DLATE_WITHOUT_MARGIN|lease.pml"
  "lease-no-first-timestamp|violates 1|-DNO_FIRST_TIMESTAMP|lease.pml"
)

if [ -n "$only" ]; then
  chosen=()
  for c in "${checks[@]}"; do [[ ${c%%|*} =~ $only ]] && chosen+=("$c"); done
  [ ${#chosen[@]} -gt 0 ] || { echo "model-check: no check matches $only" >&2; exit 2; }
  checks=("${chosen[@]}")
fi

# The trail spin wrote, replayed: the model's MSC lines, as a story.
story_of_trail() {
  # shellcheck disable=SC2086  # the defines are words
  spin -DTMAX="$ticks" -DFAULTS="$faults" $1 -t -k "$2.trail" "$2" 2>/dev/null \
    | grep -E "MSC|assertion violated|START OF CYCLE" | sed 's/^ *MSC: //; s/^ *spin: //' >story.txt || true
}

# What the liveness formula of these defines asks: the thing that happens
# in the end, or (with "never") what an acceptance cycle shows.
ltl_says() {
  case "$1 ${2:-}" in
    *REAP_LIVENESS*never) echo "a stale worker ID never reclaimed" ;;
    *REAP_LIVENESS*) echo "a stale worker ID is always reclaimed in the end" ;;
    *never) echo "a free worker ID never claimed" ;;
    *) echo "a free worker ID is always claimed in the end" ;;
  esac
}

# One check in its own directory: generate, compile, verify, judge.
# Writes DIR/verdict ("ok ..." or "FAILED ...") and DIR/figures.
run_check() {
  local name=$1 expect=$2 defines=$3 model=${4:-snowflake.pml} hash_bits=${5:-24}
  local dir="$out/$name"
  rm -rf "$dir" && mkdir -p "$dir" && cp "$root"/model/*.pml "$dir"/
  cd "$dir"
  # shellcheck disable=SC2086  # the defines are words
  spin -DTMAX="$ticks" -DFAULTS="$faults" $defines -a "$model" >spin.txt 2>&1 \
    || { echo "FAILED: spin -a: $(head -3 spin.txt)" >verdict; return; }
  local cflags=(-O2 -w -DCOLLAPSE -DVECTORSZ=1024 -DMEMLIM=12000)
  # A slot per state stored, about: the recycle search stores 66 million
  # states in 2^28 slots (a fuller table, -w26, costs it a sixth more time
  # in collisions); a mutant that stops at a few thousand would spend
  # seconds clearing a table that large, in the chain the whole check waits
  # on (below), so the small searches get 2^24.
  local runflags=(-m20000 "-w$hash_bits")
  if [ "$expect" = live ] || [ "$expect" = cycle ]; then
    runflags+=(-a -f)          # acceptance cycles, weak fairness
  else
    cflags+=(-DSAFETY)
    runflags+=(-E)             # time ends at --ticks: ending there is no deadlock
  fi
  gcc "${cflags[@]}" -o pan pan.c 2>gcc.txt || { echo "FAILED: gcc: $(head -3 gcc.txt)" >verdict; return; }
  local start end
  start=$(date +%s.%N)
  ./pan "${runflags[@]}" >pan.txt 2>&1 || true
  end=$(date +%s.%N)

  local states depth mem errors
  states=$(awk '/states, stored/ {print $1; exit}' pan.txt)
  depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' pan.txt | head -1)
  mem=$(awk '/total actual memory usage/ {print $1; exit}' pan.txt)
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' pan.txt | head -1)
  printf '%s %s %s %s\n' "${states:-?}" "${depth:-?}" "${mem:-?}" "$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}')" >figures

  if [ "$errors" = 0 ] && grep -q "max search depth too small\|Search not completed\|out of memory" pan.txt; then
    echo "FAILED: the search did not complete (see $dir/pan.txt)" >verdict
    return
  fi
  case "$expect" in
    clean)
      local unreached
      # The daemon's statements spin never reached, but for the end of a
      # proctype whose loop never ends ("-end-": not a step of the daemon).
      unreached=$(awk '/unreached in proctype Daemon/ {on = 1; next}
                       on && /states\)/ {sub(/.*of /, ""); sub(/ states.*/, ""); print n + 0 " of " $0; exit}
                       on && !/"-end-"/ {n++}' pan.txt)
      if [ "$errors" != 0 ]; then
        echo "FAILED: a counterexample to the real model (the story: $dir/story.txt)" >verdict
        story_of_trail "$defines" "$model"
      elif [ "${unreached%% *}" != 0 ]; then
        echo "FAILED: statements of the daemon never reached ($unreached): a vacuous model? see $dir/pan.txt" >verdict
      else
        echo "ok: no counterexample; every step of the daemon reached ($unreached unreached)" >verdict
      fi ;;
    live)
      if [ "$errors" != 0 ]; then
        story_of_trail "$defines" "$model"
        echo "FAILED: an acceptance cycle: $(ltl_says "$defines" never) (the story: $dir/story.txt)" >verdict
      else
        echo "ok: no acceptance cycle: $(ltl_says "$defines")" >verdict
      fi ;;
    cycle)
      if [ "$errors" = 0 ] || ! grep -q "acceptance cycle" pan.txt || [ ! -f "$model.trail" ]; then
        echo "FAILED: no acceptance cycle: the model does not need this rule to be live" >verdict
      else
        story_of_trail "$defines" "$model"
        echo "ok: an acceptance cycle, $(ltl_says "$defines" never), in $(grep -c -E '^t=' story.txt) steps (story.txt)" >verdict
      fi ;;
    violates*)
      local violated=0
      case "$(grep -m1 'assertion violated' pan.txt)" in
        *order_floor*) violated=11 ;;  # before *floor*
        *gone*) violated=12 ;;
        *period_left*) violated=10 ;;
        *reaper*) violated=9 ;;
        *lost_*) violated=8 ;;
        *handed_out*) violated=6 ;;
        *raised_through*) violated=7 ;;
        *issued*) violated=1 ;;
        *migrated*) violated=5 ;;
        *floor*) violated=2 ;;
        *cut_at*) violated=3 ;;
      esac
      if [ "$errors" = 0 ] || [ ! -f "$model.trail" ]; then
        echo "FAILED: no counterexample: the model does not need this rule" >verdict
      elif [ "$violated" != "${expect#violates }" ]; then
        echo "FAILED: a counterexample to property $violated, not ${expect#violates } (see $dir/pan.txt)" >verdict
      else
        story_of_trail "$defines" "$model"
        echo "ok: a counterexample to property $violated in $(grep -c -E '^(t=|seq:|period:|strict:|lease:)' story.txt) steps (story.txt)" >verdict
      fi ;;
  esac
}

started=$(date +%s)
echo "model-check: spin $(spin -V | awk '{print $3}'), $ticks ticks, $faults faults, in $out"
# The recycle pool is the largest search: it runs while the others run in turn.
( IFS='|' read -r n e d m w <<<"${checks[0]}"; run_check "$n" "$e" "$d" "$m" "$w" ) &
largest=$!
for c in "${checks[@]:1}"; do
  ( IFS='|' read -r n e d m w <<<"$c"; run_check "$n" "$e" "$d" "$m" "$w" )
done
wait "$largest"

failed=0
printf '%-32s %12s %6s %9s %8s  %s\n' check states depth "memory MB" seconds verdict
for c in "${checks[@]}"; do
  name=${c%%|*}
  read -r states depth mem secs <"$out/$name/figures" 2>/dev/null || { states='?'; depth='?'; mem='?'; secs='?'; }
  verdict=$(cat "$out/$name/verdict" 2>/dev/null || echo "FAILED: no verdict")
  printf '%-32s %12s %6s %9s %8s  %s\n' "$name" "$states" "$depth" "$mem" "$secs" "$verdict"
  case "$verdict" in ok*) ;; *) failed=1 ;; esac
done
echo "model-check: $(( $(date +%s) - started )) s in all"

if [ -n "$story" ]; then
  echo
  echo "the counterexample of $story ($out/$story/story.txt):"
  cat "$out/$story/story.txt"
fi
exit "$failed"
