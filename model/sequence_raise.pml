/*
 * `seq raise` as a checked model (README.md here, "Sequences").
 *
 * Two daemons take ranges of one tag and hand them out a number at a time,
 * as src/sequence_store/sequence_supplier_ranges.cpp does; `seq raise` (the Raiser, as
 * src/commands/seq_raise.cpp does) lifts the tag's floor, then reads each
 * daemon's holder node until every daemon that may still hand out a number
 * at or below the floor has said it dropped them. How a take is decided
 * (nonces, lost answers) is sequence.pml's: here a take is one atomic step
 * that starts above the floor, as plan_take does.
 *
 * A daemon's take, as the code orders it: the take; its holder node names
 * the range; the tag's floor read again (a watch set on its floor child,
 * then the node read: one step here, since a raise after the read still
 * fires the watch) and the buffer dropped through its floor; only then the
 * range joins the buffer. A take writes only the tag's node, and fires no
 * daemon's watch; a raise writes the node and its floor child in one multi,
 * and fires the watches set; a daemon whose watch fired reads the node
 * again (and watches the child again), drops its buffer through the floor,
 * then says so in its holder node.
 *
 * A number goes out in two steps, as in the code: a request reserves it
 * (SequenceBuffer::take), then its reply is written. Each reply is counted
 * in the daemon's epoch from before its reservation until written
 * (RepliesInFlight; the model makes the count and the reservation one
 * step, which the epoch read again after counting makes sound). After a
 * drop the daemon opens a new epoch, and acknowledges only once no reply
 * of the epoch before is in flight: a reply reserved before the drop may
 * hold a number at or below the floor. In the same way the holder node's
 * `from` (what the run may still hand out starts there) moves up only once
 * the replies reserved before its new value was read are written.
 *
 * Faults, from one budget (FAULTS): a daemon cut off from ZooKeeper for good
 * (it goes on handing out what its buffer holds: a sequence has no lease).
 *
 * Property 7 of README.md (assertion "raised_through"): once the raise is
 * confirmed, no reply carrying a number at or below its floor is written
 * (reaches a client). Property 6 too (assertion "handed_out"): no number
 * twice.
 *
 * Mutants (spin must find a counterexample to each):
 *   -DREAD_FLOOR_FIRST   the floor read before the holder node names the
 *                        range (a raise between the two sees neither)
 *   -DACK_BEFORE_DROP    the holder node says "dropped" before the buffer is
 *   -DEPHEMERAL_HOLDER   the holder node goes with the session (ephemeral):
 *                        a cut-off daemon's holdings vanish from the raise's
 *                        sight while it still hands them out
 *   -DACK_BEFORE_REPLIES the acknowledgement written once the buffer drops,
 *                        without waiting for the replies reserved before
 *   -DFROM_WITHOUT_DRAIN the holder node's `from` moved up to the buffer's
 *                        first unused number at once: a reply in flight
 *                        below it is out of the raise's sight
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
bool watch[2];              /* a watch set on the tag's floor child by daemon m */
bool fired[2];              /* daemon m's watch fired, not yet handled */
bool rec[2];                /* daemon m's holder node exists */
byte rec_from[2], rec_to[2], rec_dropped[2];

/* ---- the world ---- */
byte faults;
bool cut[2];                /* daemon m cut off from ZooKeeper for good */
byte b_from[2], b_to[2];    /* daemon m's buffer: [from, to) not yet handed out */
bool done[2];               /* daemon m's supplier has ended */
bit handed_out[NMAX];       /* ghost: each number handed out */
/* daemon m's request: a reply reserved, not yet written; and whether it
   was reserved before the daemon's last drop (counted in the epoch that
   the drop's begin_drain closed: what drained() waits for) */
bool busy[2];
byte reply_num[2];
bit old_epoch[2];
byte raised_through;        /* ghost: the floor of the raise once confirmed; 0 none */

/* A write of the tag's floor child (a raise's) fires the watches set on it. */
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
     /* the counter only: the floor child, which the watches are on, stays */
     p_from = next; p_to = p_from + STEP; next = p_to; took++;
     printf("MSC: seq: daemon %d takes [%d, %d)\n", m, p_from, p_to) }
#ifdef READ_FLOOR_FIRST
     atomic { !cut[m] -> f = floor; watch[m] = true;
              if :: f > dropped -> dropped = f :: else -> skip fi;
              printf("MSC: seq: daemon %d reads floor %d\n", m, f) }
     atomic { !cut[m] -> if :: !rec[m] -> rec_from[m] = p_from :: else -> skip fi;
              rec[m] = true; rec_to[m] = p_to;
              printf("MSC: seq: daemon %d's holder node: [%d, %d)\n", m, p_from, p_to) }
#else
     atomic { !cut[m] -> if :: !rec[m] -> rec_from[m] = p_from :: else -> skip fi;
              rec[m] = true; rec_to[m] = p_to;
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
     /* the drop, then a new epoch (begin_drain) */
     atomic { if :: f > dropped -> dropped = f :: else -> skip fi;
              if :: b_from[m] <= f && f < b_to[m] -> b_from[m] = f + 1
                 :: b_from[m] <= f && f >= b_to[m] -> b_from[m] = b_to[m]
                 :: else -> skip fi;
              old_epoch[m] = busy[m] }
     /* acknowledged once drained: no reply of the epoch before in flight */
#ifdef ACK_BEFORE_REPLIES
     atomic { !cut[m] -> rec_dropped[m] = f;
#else
     atomic { !cut[m] && !old_epoch[m] -> rec_dropped[m] = f;
#endif
              printf("MSC: seq: daemon %d's holder node: dropped through %d\n", m, f) }
#endif
     f = 0
  /* the holder node's `from` brought up to the buffer's first unused
     number F, once every reply reserved before F was read is written. The
     code reads F, opens an epoch, and writes F once the epoch before is
     drained; replies reserved meanwhile hold F or above. One step here:
     taken when no reply below F is in flight (any reply in flight is).
     Daemon 1's only, whose replies take two steps (below); daemon 0's
     `from` stays where its first range began, which is safe too. */
#ifdef FROM_WITHOUT_DRAIN
  :: atomic { m == 1 && !cut[m] && rec[m] && b_from[m] < b_to[m] && b_from[m] > rec_from[m] ->
#else
  :: atomic { m == 1 && !cut[m] && rec[m] && b_from[m] < b_to[m] && b_from[m] > rec_from[m] &&
              !busy[m] ->
#endif
     rec_from[m] = b_from[m];
     printf("MSC: seq: daemon %d's holder node: from %d\n", m, rec_from[m]) }
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

/* Daemon m's requests, beside its supplier: the next number of the buffer
   reserved (counted in the epoch, then SequenceBuffer::take), then its
   reply written, a step later. Daemon 0's replies are written at once (the
   bound: replies in flight on one daemon, whose raise and acknowledgement
   do not depend on the other's). */
proctype Requests(byte m) {
  do
  :: atomic { m == 0 && b_from[m] < b_to[m] ->
     printf("MSC: seq: daemon %d's reply carries %d\n", m, b_from[m]);
     assert(!handed_out[b_from[m]]);          /* property 6 */
     assert(b_from[m] > raised_through);      /* property 7 */
     handed_out[b_from[m]] = 1; b_from[m]++ }
  :: atomic { m == 1 && b_from[m] < b_to[m] && !busy[m] ->
     busy[m] = true; reply_num[m] = b_from[m]; b_from[m]++;
     printf("MSC: seq: daemon %d reserves %d\n", m, reply_num[m]) }
  :: atomic { busy[m] ->
     printf("MSC: seq: daemon %d's reply carries %d\n", m, reply_num[m]);
     assert(!handed_out[reply_num[m]]);       /* property 6 */
     assert(reply_num[m] > raised_through);   /* property 7 */
     handed_out[reply_num[m]] = 1; busy[m] = false; old_epoch[m] = 0; reply_num[m] = 0 }
  :: atomic { done[m] && b_from[m] == b_to[m] && !busy[m] -> break }
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
