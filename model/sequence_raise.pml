/*
 * `seq raise` as a checked model (README.md here, "Sequences").
 *
 * Two daemons take ranges of one tag and hand them out a number at a time,
 * as src/coord/sequence_supplier.cpp does; `seq raise` (the Raiser, as
 * src/commands/seq_raise.cpp does) lifts the tag's floor, then reads each
 * daemon's holder node until every daemon that may still hand out a number
 * at or below the floor has said it dropped them. How a take is decided
 * (nonces, lost answers) is sequence.pml's: here a take is one atomic step
 * that starts above the floor, as plan_take does.
 *
 * A daemon's take, as the code orders it: the take; its holder node names
 * the range; the tag's node read again (setting a watch) and the buffer
 * dropped through its floor; only then the range joins the buffer. A floor
 * write fires the watches set; a daemon whose watch fired reads the node
 * again (and watches it again), drops its buffer through the floor, then
 * says so in its holder node.
 *
 * Faults, from one budget (FAULTS): a daemon cut off from ZooKeeper for good
 * (it goes on handing out what its buffer holds: a sequence has no lease).
 *
 * Property 7 of README.md (assertion "raised_through"): once the raise is
 * confirmed, no number at or below its floor is handed out. Property 6 too
 * (assertion "handed_out"): no number twice.
 *
 * Mutants (spin must find a counterexample to each):
 *   -DREAD_FLOOR_FIRST   the floor read before the holder node names the
 *                        range (a raise between the two sees neither)
 *   -DACK_BEFORE_DROP    the holder node says "dropped" before the buffer is
 *   -DEPHEMERAL_HOLDER   the holder node goes with the session (ephemeral):
 *                        a cut-off daemon's holdings vanish from the raise's
 *                        sight while it still hands them out
 */

#ifndef FAULTS
#define FAULTS 1
#endif
#define STEP 2              /* numbers per range */
#define TAKES 2             /* ranges a daemon takes */
#define NMAX 10             /* numbers there are room for */

/* ---- ZooKeeper ---- */
byte next = 1;              /* the tag's node: the first number never taken */
byte floor;                 /* ... and its floor (seq raise) */
bool watch[2];              /* a watch set on the tag's node by daemon m */
bool fired[2];              /* daemon m's watch fired, not yet handled */
bool rec[2];                /* daemon m's holder node exists */
byte rec_from[2], rec_to[2], rec_dropped[2];

/* ---- the world ---- */
byte faults;
bool cut[2];                /* daemon m cut off from ZooKeeper for good */
byte b_from[2], b_to[2];    /* daemon m's buffer: [from, to) not yet handed out */
bool done[2];               /* daemon m's supplier has ended */
bit handed_out[NMAX];       /* ghost: each number handed out */
byte raised_through;        /* ghost: the floor of the raise once confirmed; 0 none */

/* A write of the tag's node fires the watches set on it. */
inline fire_watches() {
  if :: watch[0] -> fired[0] = true; watch[0] = false :: else -> skip fi;
  if :: watch[1] -> fired[1] = true; watch[1] = false :: else -> skip fi
}

/* Daemon m's supplier thread. */
proctype Daemon(byte m) {
  byte took, p_from, p_to, dropped, f;
  do
  /* a take, when the buffer is empty and no range is on its way */
  :: atomic { !cut[m] && took < TAKES && p_to == 0 && b_from[m] == b_to[m] && next + STEP <= NMAX ->
     /* above the floor: seq raise moved next above it (plan_take also
        starts above it) */
     p_from = next; p_to = p_from + STEP; next = p_to; took++;
     fire_watches();
     printf("MSC: seq: daemon %d takes [%d, %d)\n", m, p_from, p_to) }
#ifdef READ_FLOOR_FIRST
     atomic { !cut[m] -> f = floor; watch[m] = true;
              if :: f > dropped -> dropped = f :: else -> skip fi;
              printf("MSC: seq: daemon %d reads floor %d\n", m, f) }
     atomic { !cut[m] -> rec[m] = true; rec_from[m] = p_from; rec_to[m] = p_to;
              printf("MSC: seq: daemon %d's holder node: [%d, %d)\n", m, p_from, p_to) }
#else
     atomic { !cut[m] -> rec[m] = true; rec_from[m] = p_from; rec_to[m] = p_to;
              printf("MSC: seq: daemon %d's holder node: [%d, %d)\n", m, p_from, p_to) }
     atomic { !cut[m] -> f = floor; watch[m] = true;
              if :: f > dropped -> dropped = f :: else -> skip fi;
              printf("MSC: seq: daemon %d reads floor %d\n", m, f) }
#endif
     /* the range joins the buffer, clipped at the floor dropped through */
     atomic {
       if :: p_from > dropped -> b_from[m] = p_from :: else -> b_from[m] = dropped + 1 fi;
       b_to[m] = p_to;
       if :: b_from[m] > b_to[m] -> b_from[m] = b_to[m] :: else -> skip fi;
       p_from = 0; p_to = 0; f = 0 }
  /* the watch fired: read again (and watch again), drop, then say so */
  :: atomic { !cut[m] && fired[m] -> fired[m] = false; f = floor; watch[m] = true;
     printf("MSC: seq: daemon %d's watch: floor %d\n", m, f) }
#ifdef ACK_BEFORE_DROP
     atomic { !cut[m] -> rec_dropped[m] = f;
              printf("MSC: seq: daemon %d's holder node: dropped through %d\n", m, f) }
     atomic { if :: f > dropped -> dropped = f :: else -> skip fi;
              if :: b_from[m] <= f && f < b_to[m] -> b_from[m] = f + 1
                 :: b_from[m] <= f && f >= b_to[m] -> b_from[m] = b_to[m]
                 :: else -> skip fi }
#else
     atomic { if :: f > dropped -> dropped = f :: else -> skip fi;
              if :: b_from[m] <= f && f < b_to[m] -> b_from[m] = f + 1
                 :: b_from[m] <= f && f >= b_to[m] -> b_from[m] = b_to[m]
                 :: else -> skip fi }
     atomic { !cut[m] -> rec_dropped[m] = f;
              printf("MSC: seq: daemon %d's holder node: dropped through %d\n", m, f) }
#endif
     f = 0
  /* cut off from ZooKeeper for good: its session ends */
  :: atomic { !cut[m] && faults < FAULTS -> faults++; cut[m] = true; watch[m] = false;
#ifdef EPHEMERAL_HOLDER
     rec[m] = false;
#endif
     printf("MSC: seq: daemon %d cut off from ZooKeeper\n", m) }
  :: atomic { (took >= TAKES || next + STEP > NMAX || cut[m]) && p_to == 0 && b_from[m] == b_to[m] ->
     done[m] = true; break }
  od
}

/* Daemon m's requests, beside its supplier: the next number of the buffer,
   one atomic step (SequenceBuffer::take). */
proctype Requests(byte m) {
  do
  :: atomic { b_from[m] < b_to[m] ->
     printf("MSC: seq: daemon %d hands out %d\n", m, b_from[m]);
     assert(!handed_out[b_from[m]]);          /* property 6 */
     assert(b_from[m] > raised_through);      /* property 7 */
     handed_out[b_from[m]] = 1; b_from[m]++ }
  :: atomic { done[m] && b_from[m] == b_to[m] -> break }
  od
}

/* seq raise --above N: the floor written, then the holder nodes read one at
   a time until a pass finds every daemon confirmed; or it gives up (exit 1). */
proctype Raiser() {
  byte n, m;
  bool ok;
  if :: n = 2 :: n = 4 :: n = 6 fi;
  atomic { n > floor -> floor = n; if :: next <= n -> next = n + 1 :: else -> skip fi;
           fire_watches();
           printf("MSC: seq: raise: floor %d\n", n) }
  do
  :: ok = true; m = 0;
     do
     :: m < 2 ->
        atomic { if :: rec[m] && rec_from[m] < rec_to[m] && rec_from[m] <= n && rec_dropped[m] < n ->
                       ok = false
                    :: else -> skip fi; m++ }
     :: else -> break
     od;
     if
     :: ok -> atomic { raised_through = n; printf("MSC: seq: raise confirmed: %d\n", n) }; break
     :: !ok -> skip   /* poll again */
     :: !ok -> break  /* the deadline: exit 1 */
     fi
  od
}

init {
  atomic { run Daemon(0); run Daemon(1); run Requests(0); run Requests(1); run Raiser() }
}
