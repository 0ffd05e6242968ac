/*
 * A dense sequence's ranges as a checked model (README.md here, "Sequences").
 *
 * Two daemons take ranges of one tag from its node, <root>/sequences/<tag>,
 * as src/sequence_store/sequence_ranges.cpp does: read the node (next, version, the
 * nonces of the last takes), then one write conditional on the version read
 * that moves `next` on by a range and records the attempt's nonce. ZooKeeper
 * is modelled by its guarantees: a write is applied atomically and checks
 * its version; a daemon waits for each answer.
 *
 * Faults, from one budget (FAULTS): an answer lost after the write was
 * applied; a write sent but applied only later, after the daemon read the
 * node back (its connection was lost with the request in flight); a crash
 * (kill -9) at any step, the run's range gone with it, and a restart with a
 * new run. A clean stop gives back the rest of the newest range.
 *
 * Property 6 of README.md (assertion "handed_out"): no number is handed out twice. A run hands
 * out the numbers of a range it holds, one at a time, each marked in a ghost
 * array as it goes.
 *
 * Mutants (spin must find a counterexample to each):
 *   -DDATA_EQUALITY          a lost answer is decided by the node's data
 *                            equal to what was written (next), not by the
 *                            attempt's nonce
 *   -DUNVERSIONED_GIVE_BACK  a clean stop writes `next` back at any version
 *
 * Small state on purpose: a nonce is (run, attempt) as take_nonce() makes it,
 * a run is (daemon, restart), so two orders of the same steps meet in one
 * state.
 */

#ifndef FAULTS
#define FAULTS 2
#endif
#define STEP 2              /* numbers per range */
#define TAKES 2             /* ranges a run takes */
#define KEPT 2              /* nonces the node remembers (kSequenceTakesKept) */
#define NMAX 8              /* numbers there are room for */
#define RESTARTS 2          /* runs of a daemon after its first */
#define ATTEMPTS 4          /* a run's attempts + 1: nonce = run * 4 + attempt */

/* ---- the node ---- */
byte next = 1;              /* the first number never taken */
byte version;
byte kept[KEPT];            /* the last takes' nonces, newest at 0 (0: none) */

/* ---- the world ---- */
byte faults;
bit handed_out[NMAX];       /* ghost: each number handed out */
/* a write sent but not yet applied: its version, next, nonce */
bool pending;
byte pending_version, pending_next, pending_nonce;

/* The write, as ZooKeeper applies it: only at the version read. */
inline apply(v, n, nonce, ok) {
  if
  :: version == v -> version++; next = n; kept[1] = kept[0]; kept[0] = nonce; ok = true
  :: else -> ok = false
  fi
}

/* Hands out the range, or all of it but its last number (what the requests
   asked for before the run stopped or took again: the rest is the run's
   unused rest, to give back at a clean stop). Each number is checked. */
inline hand_out(from, to) {
  atomic {
  if
  :: rest_from = to
  :: rest_from = to - 1
  fi;
  printf("MSC: seq: daemon %d run %d hands out [%d, %d), keeps [%d, %d)\n", m, restarts, from,
         rest_from, rest_from, to);
  i = from;
  do
  :: i < rest_from ->
     assert(!handed_out[i]);  /* property 6: never twice */
     handed_out[i] = 1; i++
  :: else -> break
  od;
  rest_to = to; i = 0
  }
}

proctype Daemon(byte m) {
  byte restarts, took, attempt, v, n, nonce, start, i, rest_from, rest_to;
  bool ok, mine;
  do
  :: atomic { took < TAKES && next + STEP < NMAX && attempt < ATTEMPTS - 1 ->
     /* take_range: read the node */
     attempt++; v = version; start = next; n = next + STEP;
     nonce = ((restarts * 2 + m) + 1) * ATTEMPTS + attempt;
     printf("MSC: seq: daemon %d run %d reads next %d at version %d; writes next %d with nonce %d\n",
            m, restarts, start, v, n, nonce) }
     if
     :: /* the write, answered */
        atomic { apply(v, n, nonce, ok);
                 printf("MSC: seq: daemon %d: the write of nonce %d answered %d\n", m, nonce, ok) }
        if
        :: ok -> hand_out(start, n); took++
        :: else -> skip  /* bad_version: another daemon took first; read again */
        fi
     :: atomic { faults < FAULTS -> faults++ }
        /* the write applied, its answer lost: read the node back */
        atomic { apply(v, n, nonce, ok);
                 printf("MSC: seq: daemon %d: the write of nonce %d applied (%d), its answer lost\n",
                        m, nonce, ok) }
        goto decide
     :: atomic { faults < FAULTS && !pending -> faults++;
        pending = true; pending_version = v; pending_next = n; pending_nonce = nonce;
        printf("MSC: seq: daemon %d: the write of nonce %d is delayed, its answer lost\n", m, nonce) }
        /* sent, not yet applied, the answer lost: read the node back */
decide:
        atomic {
#ifdef DATA_EQUALITY
          mine = (next == n);
#else
          mine = (kept[0] == nonce || kept[1] == nonce);
#endif
          printf("MSC: seq: daemon %d reads the node back: next %d, nonces %d %d: mine %d\n",
                 m, next, kept[0], kept[1], mine)
        }
        if
        :: mine -> hand_out(start, n); took++
        :: else -> skip  /* not applied, or no longer known: never used (a gap) */
        fi
     fi;
     atomic { v = 0; n = 0; nonce = 0; start = 0; ok = false; mine = false }
  :: atomic { faults < FAULTS && restarts < RESTARTS -> faults++;
     /* kill -9; restarted: a new run, its range gone */
     printf("MSC: seq: daemon %d run %d killed, restarted\n", m, restarts);
     restarts++; took = 0; attempt = 0; rest_from = 0; rest_to = 0 }
  :: atomic { took > 0 && restarts < RESTARTS ->
     /* give_back at a clean stop: read; when the newest take is this run's
        and nothing was taken after it, write `next` back to the rest's start,
        conditional on the version read (plan_give_back) */
     v = version;
     ok = (kept[0] / ATTEMPTS == restarts * 2 + m + 1 && next == rest_to && rest_from < rest_to) }
     if
     :: ok ->
        atomic {
#ifdef UNVERSIONED_GIVE_BACK
          next = rest_from; version++;
#else
          if
          :: version == v -> next = rest_from; version++; kept[0] = 0
          :: else -> skip
          fi;
#endif
          printf("MSC: seq: daemon %d run %d stops, gives back from %d: next %d\n",
                 m, restarts, rest_from, next)
        }
     :: else -> skip
     fi;
     atomic { restarts++; took = 0; attempt = 0; rest_from = 0; rest_to = 0; v = 0; ok = false }
  :: took >= TAKES || next + STEP >= NMAX || attempt >= ATTEMPTS - 1 -> break
  od
}

/* A write sent before its daemon read the node back lands now. */
active proctype Network() {
  bool ok;
end:
  do
  :: atomic { pending -> apply(pending_version, pending_next, pending_nonce, ok);
              printf("MSC: seq: the delayed write of nonce %d lands: applied %d\n", pending_nonce, ok);
              pending = false; pending_version = 0; pending_next = 0; pending_nonce = 0;
              ok = false }
  od
}

init {
  atomic { run Daemon(0); run Daemon(1) }
}
