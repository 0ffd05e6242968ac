/*
 * A strict sequence (`seq create --order strict`) as a model: one owner at
 * a time hands it out, fenced by its worker ID's own lease
 * (src/sequence_store/strict_owner.cpp).
 *
 * Checked by scripts/model-check.sh (strict, strict-early-takeover,
 * strict-any-run). Here (2 cores, spin 6.5.2; 8 ticks, 3 requests):
 * `strict` 4,310,931 states stored, 10,228,306 transitions, depth 170,
 * 459 MB, 7 s, every statement of the daemon reached;
 * `strict-early-takeover` property 11 in 16 steps (293,406 states, 0.5 s);
 * `strict-any-run` property 11 in 18 steps (794,979 states, 1 s).
 * (Its first form, the client a process of its own, the versions and runs
 * as counters and each heartbeat's tick noted, did not finish: 8.6e7
 * states after 4 minutes at 5 ticks and 2 requests.)
 *
 * Two daemons, each holding one worker ID (daemon m holds worker ID m),
 * and ZooKeeper, whose clock T ticks on. Each daemon's coordinator sends a
 * heartbeat, which ZooKeeper applies (the worker node's mtime is T then, its
 * alive node kept) and whose answer extends the lease to the time it was
 * sent plus LEASE, on a monotonic clock that runs with T. A lease that runs
 * out ends its run; the next heartbeat starts a new one. A daemon may be
 * cut off from ZooKeeper, once (no request of it reaches ZooKeeper; its
 * session ends SESSION ticks after its last contact, and its alive node
 * with it), and come back; one daemon may stop cleanly. A daemon may be
 * held up between any two steps (frozen: the clock ticks on without it).
 *
 * The tag's owner record: `owner` (NONE: released) and its version. A
 * daemon's supplier reads it, and:
 *  - ours, the lease valid: the gate opens for the lease's current run;
 *  - not ours: the gate closes and what the buffer held is dropped;
 *  - released: claimed (conditional on the record's version);
 *  - another's: taken over only if that owner's alive node is gone and its
 *    worker node was last written RECLAIM ago, in one multi checking the
 *    record's version, the worker node's version and the alive node's
 *    absence.
 * The claim may be sent much later than the read (the daemon held up); it
 * drops what the daemon still held (SequenceSupplier::drop_held). The
 * owner alone takes ranges from the node (`next`); a clean stop closes the
 * gate, gives the rest back if nobody took since, and releases.
 *
 * Properties:
 *  11. real-time order: a number handed out for a request is above every
 *      number any client had received before that request was sent:
 *      assertion "order_floor";
 *   6. no number twice: assertion "handed_out".
 *
 * Mutants (spin must find a counterexample to each):
 *   -DEARLY_TAKEOVER  the takeover waits only for the alive node to go (the
 *                     session's end), not for the lease: an owner cut off
 *                     still in its lease serves below the new owner's
 *                     numbers (violates 11)
 *   -DANY_RUN         the gate ignores the lease's run: an owner whose lease
 *                     ran out and was renewed after a takeover serves before
 *                     it reads the record again (violates 11)
 * (A third, KEEP_BUFFER, the claim keeping what the daemon took in an
 * earlier ownership, is gone: spin found no counterexample to it, searching
 * all of this model. Every claim follows a read of the record as not ours,
 * which has already dropped the buffer: the claim's drop is the second of
 * the two guards, and taking both out does give a counterexample.)
 *
 * What keeps the search small, each step of the protocol kept:
 *  - One client, sending a request only once it has received the answer to
 *    the last: every pair in real-time order is one of its own (two clients
 *    add interleavings, not pairs). Its request's floor is then the largest
 *    number it has received (order_floor), unchanged until the request is
 *    served, so sending, being served and receiving are one step of the
 *    daemon that serves it; a request refused (gate closed) is one the
 *    client never sent. ASKS bounds the requests.
 *  - Versions as what the multi checks of them: whether the owner record
 *    (rec_same) or the other's worker node (wn_same) was written since the
 *    daemon read it; the lease's run as whether the gate was opened in the
 *    current run (this_run, cleared when the lease runs out). A second
 *    heartbeat in a tick changes nothing, so heartbeats are not counted.
 *  - State that no longer matters reset: an empty buffer is [0, 0), a lease
 *    run out has deadline 0, a stopped daemon's state cleared.
 */

#define NONE 2
#define LEASE 3     /* a heartbeat's answer: valid until its send + LEASE */
#define RECLAIM 4   /* >= LEASE + the safety margin (1 tick) */
#define SESSION 1   /* ZooKeeper ends a silent session after this: < LEASE */
#define STEP 2      /* a range's size */
#define NMAX 7      /* numbers 1 .. NMAX - 1: three ranges */
#define ASKS 3      /* requests the client sends, one after the other */
/* 8 ticks: a takeover (at 4 at the earliest) and one back (at 8). Not the
   suite's --ticks, which bounds the other models. */
#ifndef STRICT_TMAX
#define STRICT_TMAX 8
#endif

/* ---- ZooKeeper ---- */
byte T;
byte owner = NONE;       /* the owner record */
byte next = 1;           /* the sequence node: the first number never taken */
byte mtime[2];           /* each worker node's last write (a heartbeat) */
bool alive[2] = true;    /* each alive node (the session's) */
byte cut_at[2];          /* when the daemon was cut off: its session ends SESSION after */
/* The versions a claim's multi checks, as "not written since daemon m read it": */
bit rec_same[2];         /* the owner record's */
bit wn_same[2];          /* the other daemon's worker node's */

/* ---- the daemons ---- */
byte cutst[2];           /* 0: never cut off, 1: cut off now, 2: back (once) */
bool stopped[2];
byte dl[2] = LEASE;      /* the lease's deadline (0: run out) */
bit owned[2];            /* the gate: the record read as ours ... */
bit this_run[2];         /* ... in the lease's current run */
byte lo[2], hi[2];       /* the buffer: [lo, hi) ([0, 0): empty) */
byte claim[2];           /* the claim to send: 0 none, 1 of the released tag, 2 a takeover */

/* ---- the client and the ghosts ---- */
byte asks;               /* requests answered */
byte order_floor;        /* the largest number the client has received */
bit handed_out[NMAX + STEP];

#define LIVE(m) (!stopped[m] && cutst[m] != 1)
#define LEASE_VALID(m) (T < dl[m])
#define GATE_OPEN(m) (owned[m] && LEASE_VALID(m) && this_run[m])
#ifdef ANY_RUN
#undef GATE_OPEN
#define GATE_OPEN(m) (owned[m] && LEASE_VALID(m))
#endif

#define EMPTY(m) lo[m] = 0; hi[m] = 0

proctype Daemon(byte m) {
  do
  /* the client's request, sent once it had received the last answer (its
     floor: order_floor), served here (the daemon may be cut off): the gate
     open and a number in the buffer */
  :: atomic { !stopped[m] && asks < ASKS && GATE_OPEN(m) && lo[m] < hi[m] ->
       printf("MSC: strict: T=%d daemon %d hands out %d (asked after %d was received)\n",
              T, m, lo[m], order_floor);
       assert(lo[m] > order_floor);       /* property 11: order_floor */
       assert(!handed_out[lo[m]]);        /* property 6: handed_out */
       handed_out[lo[m]] = 1;
       order_floor = (lo[m] > order_floor -> lo[m] : order_floor);
       asks++;
       lo[m]++;
       if :: lo[m] == hi[m] -> EMPTY(m) :: else -> skip fi }
  /* the heartbeat: ZooKeeper writes the worker node (its mtime: T) and
     keeps the alive node; the answer extends the lease from the send (here:
     the same tick). After a lease that ran out (dl 0): a new run. */
  :: atomic { LIVE(m) ->
       mtime[m] = T; wn_same[1 - m] = 0; alive[m] = true;
       dl[m] = T + LEASE;
       printf("MSC: strict: T=%d daemon %d heartbeat (lease to %d)\n", T, m, dl[m]) }
  /* the supplier's pass: the record read; not ours: the gate closed and the
     buffer dropped; ours, the lease valid: the gate opens in this run;
     released, or another's and judged gone: a claim to send */
  :: atomic { LIVE(m) && claim[m] == 0 ->
       if
       :: owner != m && owned[m] ->
          owned[m] = 0; this_run[m] = 0; EMPTY(m);
          printf("MSC: strict: T=%d daemon %d is not the owner any more\n", T, m)
       :: else -> skip
       fi;
       if
       :: owner == m && LEASE_VALID(m) && !(owned[m] && this_run[m]) ->
          owned[m] = 1; this_run[m] = 1;
          printf("MSC: strict: T=%d daemon %d reads the record ours: the gate opens\n", T, m)
       :: owner == NONE -> claim[m] = 1; rec_same[m] = 1
#ifdef EARLY_TAKEOVER
       :: owner == 1 - m && !alive[1 - m] ->
#else
       :: owner == 1 - m && !alive[1 - m] && T >= mtime[1 - m] + RECLAIM ->
#endif
          claim[m] = 2; rec_same[m] = 1; wn_same[m] = 1
       :: else -> skip
       fi }
  /* the claim: one multi, maybe much later (the daemon held up), checking
     the record's version and, for a takeover, the worker node's version
     and the alive node's absence; what the daemon still held dropped */
  :: atomic { claim[m] != 0 ->
       if
       :: LIVE(m) && rec_same[m] && LEASE_VALID(m) &&
          (claim[m] == 1 || (wn_same[m] && !alive[1 - m])) ->
          EMPTY(m); owner = m; rec_same[0] = 0; rec_same[1] = 0;
          printf("MSC: strict: T=%d daemon %d claims the tag (%d: 1 released, 2 taken over)\n",
                 T, m, claim[m])
       :: else -> skip  /* refused, or not sent */
       fi;
       claim[m] = 0; rec_same[m] = 0; wn_same[m] = 0 }
  /* the owner takes a range: one write to the node */
  :: atomic { LIVE(m) && owned[m] && lo[m] == hi[m] && next + STEP <= NMAX ->
       lo[m] = next; hi[m] = next + STEP; next = next + STEP;
       printf("MSC: strict: T=%d daemon %d takes [%d, %d)\n", T, m, lo[m], hi[m]) }
  /* a clean stop (one daemon): the gate closed, the rest given back if
     nobody took since, the record released */
  :: atomic { LIVE(m) && !stopped[1 - m] ->
       stopped[m] = true;
       if
       :: owned[m] && owner == m ->
          if :: lo[m] < hi[m] && next == hi[m] -> next = lo[m] :: else -> skip fi;
          owner = NONE; rec_same[0] = 0; rec_same[1] = 0;
          printf("MSC: strict: T=%d daemon %d stops and releases the tag\n", T, m)
       :: else -> printf("MSC: strict: T=%d daemon %d stops\n", T, m)
       fi;
       owned[m] = 0; this_run[m] = 0; EMPTY(m); alive[m] = false;
       claim[m] = 0; rec_same[m] = 0; wn_same[m] = 0; dl[m] = 0 }
  /* cut off from ZooKeeper (once), and back */
  :: atomic { cutst[m] == 0 && !stopped[m] -> cutst[m] = 1; cut_at[m] = T;
              printf("MSC: strict: T=%d daemon %d cut off\n", T, m) }
  :: atomic { cutst[m] == 1 -> cutst[m] = 2; cut_at[m] = 0;
              printf("MSC: strict: T=%d daemon %d back\n", T, m) }
  :: atomic { T >= STRICT_TMAX -> break }
  od
}

/* A tick, for daemon k: its lease, run out, ends its run (the gate's run is
   over); its session, cut off SESSION ticks since, ends (the alive node). */
inline tick(k) {
  if :: dl[k] != 0 && dl[k] <= T -> dl[k] = 0; this_run[k] = 0 :: else -> skip fi;
  if :: alive[k] && cutst[k] == 1 && T >= cut_at[k] + SESSION + 1 -> alive[k] = false
     :: else -> skip fi
}

/* ZooKeeper's clock (the daemons' monotonic clocks run with it) */
active proctype Clock() {
end:
  do
  :: atomic { T < STRICT_TMAX -> T++; tick(0); tick(1) }
  od
}

init {
  atomic { run Daemon(0); run Daemon(1) }
}
