/*
 * A worker ID leased to a holder we do not run (a generator in another
 * process: POST /v1/leases, src/workers/lease_pool.cpp) as a checked model
 * (README.md here, "Leases"; DESIGN.md rule 10).
 *
 * One worker ID, inuse/0 or notuse/0, and two holders, each taking up to
 * two leases one after the other, each with its own wall clock (ZooKeeper's
 * T plus an offset, -1 .. +1 tick) and its own deadline clock (T: a clock
 * that counts a suspend). A holder sends a take, renewals and a give-back
 * to the daemons (one process stands for any daemon of the cluster: its
 * steps are atomic on ZooKeeper), which answer when they get to it and
 * whose answers reach the holder when they do: a request or an answer may
 * wait any number of ticks. Meanwhile the holder stamps IDs: an instant of
 * its wall clock, within its grant (from `first`, up to its time fence
 * `max`), before its deadline, above its own last stamp. A holder may stop
 * at any moment without a word (killed, frozen for good).
 *
 * ZooKeeper's servers' clocks disagree by up to a tick: each write's mtime,
 * and each reading of ZooKeeper's time, is T or T + 1. The margin (the
 * safety margin and the skew bound, a tick) covers it.
 *
 * The daemons' side, as the code does it:
 *   take      inuse/0 free: owned by the token, mtime and ts (our wall
 *             clock, T) written; the answer: first = floor + 1, max = T +
 *             LEASE. Taken: refused (the holder tries again later).
 *   renew     the node the token's: late if its last write is older than
 *             LEASE + MARGIN by ZooKeeper's records (the worker ID goes
 *             back, above the last grant's fence; lost), else mtime and ts
 *             written again, max = ts + LEASE; not the token's: lost.
 *   give back the node the token's: back to notuse above the holder's last
 *             stamp (and every stamp a renewal reported).
 *   reaper    inuse/0 older than LEASE + MARGIN by ZooKeeper's time (a
 *             reading against the node's mtime): back to notuse above the
 *             last grant's fence (ts + LEASE).
 * The holder's side: its deadline is (its clock when it SENT the take or
 * the renewal that was granted) + LEASE.
 *
 * Properties:
 *   1. no instant issued by two leases, as the stronger: the ranges of
 *      instants two leases stamped are disjoint (ghosts: each lease's
 *      lowest and highest stamp): assertion "issued twice";
 *  12. a holder stamps nothing once its worker ID could be given to another
 *      (reclaimed, or gone back after a late renewal): assertion "gone".
 *
 * Mutants (spin must find a counterexample to each):
 *   -DDEADLINE_FROM_ANSWER  the holder counts its deadline from the answer's
 *                           arrival, not from its request (violates 12)
 *   -DRECLAIM_WITHOUT_MARGIN  the reaper takes the worker ID back once
 *                           ZooKeeper's records show the lease over, without
 *                           the margin (violates 12)
 *   -DLATE_WITHOUT_MARGIN   a renewal judged late without the margin: the
 *                           worker ID goes back while its holder may still
 *                           stamp (violates 12)
 *   -DNO_FIRST_TIMESTAMP    a new holder is not told the first timestamp it
 *                           may use and starts at its own clock (violates 1)
 */

#define LEASE 2        /* ticks a grant lasts */
#define MARGIN 1       /* safety margin + skew bound: ZooKeeper's clocks disagree by up to 1 */
#define LTMAX 6        /* T runs 0 .. LTMAX */
#define LEASES 1       /* leases each holder takes */

#define MAX(a, b) ((a) > (b) -> (a) : (b))
/* A holder's wall clock: T plus its offset (0, 1, 2: -1, 0, +1 tick). */
#define CLOCK(off) ((T + off >= 1) -> (T + off - 1) : 0)

mtype = { TAKE, RENEW, GIVE, GRANT, LOST, TAKEN };

chan req = [2] of { mtype, byte, byte, byte };       /* kind, holder, token, last stamp */
/* kind, token, first, max; room for an answer to a lease its holder
   dropped and one to the next */
chan ans[2] = [2] of { mtype, byte, byte, byte };

/* ---- ZooKeeper: worker ID 0 ---- */
byte T;
byte owner;   /* the token holding inuse/0; 0: it is in notuse */
byte mtime;   /* ZooKeeper's time of inuse/0's last write */
byte ts;      /* the granting daemon's wall clock at that write */
byte floor;   /* notuse/0: the last instant an earlier holder may have used */

/* ---- ghosts ---- */
/* Each lease's stamps, lowest and highest (a lease stamps upwards): the
   ranges of two leases must be disjoint, which is stronger than no instant
   stamped twice, and what the time fence promises. lo 0: none yet. */
byte issued_lo[3];
byte issued_hi[3];
bool gone[3];            /* the token's worker ID given away */

inline zk_time(z) {
  if :: z = T :: z = T + 1 fi
}

/* Every daemon of the cluster: each request one atomic step on ZooKeeper. */
active proctype Daemon() {
  mtype kind;
  byte h, tok, last, z;
end:
  do
  :: req ? kind, h, tok, last ->
     atomic {
       zk_time(z);
       if
       :: kind == TAKE && owner == 0 ->
          owner = tok; mtime = z; ts = T;
          printf("MSC: lease: token %d takes the worker ID at T %d (mtime %d), above %d\n",
                 tok, T, z, floor);
#ifdef NO_FIRST_TIMESTAMP
          ans[h] ! GRANT, tok, 0, T + LEASE
#else
          ans[h] ! GRANT, tok, floor + 1, T + LEASE
#endif
       :: kind == TAKE && owner != 0 ->
          ans[h] ! TAKEN, tok, 0, 0
       :: kind == RENEW && owner == tok ->
          if
#ifdef LATE_WITHOUT_MARGIN
          :: z >= mtime + LEASE ->
#else
          :: z > mtime + LEASE + MARGIN ->
#endif
             /* late: back to the pool above the last grant's fence */
             gone[tok] = true; floor = MAX(floor, ts + LEASE); owner = 0;
             printf("MSC: lease: token %d renews late at T %d (mtime %d, now %d): lost\n",
                    tok, T, mtime, z);
             ans[h] ! LOST, tok, 0, 0
          :: else ->
             mtime = z; ts = MAX(T, ts);
             printf("MSC: lease: token %d renewed at T %d (mtime %d)\n", tok, T, z);
             ans[h] ! GRANT, tok, 0, ts + LEASE
          fi
       :: kind == RENEW && owner != tok ->
          ans[h] ! LOST, tok, 0, 0
       :: kind == GIVE && owner == tok ->
          floor = MAX(floor, last); owner = 0;
          printf("MSC: lease: token %d gives the worker ID back above %d\n", tok, last)
       :: kind == GIVE && owner != tok -> skip
       fi;
       kind = 0; h = 0; tok = 0; last = 0; z = 0
     }
  od
}

/* Any daemon's reaper: a node older than the lease and the margin by
   ZooKeeper's time goes back above its grant's fence. */
active proctype Reaper() {
  byte z;
end:
  do
  :: atomic {
       owner != 0;
       zk_time(z);
       if
#ifdef RECLAIM_WITHOUT_MARGIN
       :: z >= mtime + LEASE ->
#else
       :: z > mtime + LEASE + MARGIN ->
#endif
          printf("MSC: lease: the reaper takes token %d's worker ID back at T %d (now %d)\n",
                 owner, T, z);
          gone[owner] = true; floor = MAX(floor, ts + LEASE); owner = 0
       :: else -> skip
       fi;
       z = 0
     }
  od
}

proctype Holder(byte h; byte off) {
  mtype a;
  byte tok, t, n, sent, first, max, deadline, last, u, m;
  bool renewing;
  do
  :: n < LEASES && T < LTMAX ->
     n++;
     tok = h + 1 + 2 * (n - 1);
     atomic { sent = T; req ! TAKE, h, tok, 0 }
     /* its answer; one to a lease dropped before is passed over */
     do
     :: ans[h] ? a, t, first, max ->
        if :: t == tok -> break :: else -> skip fi
     od;
     if
     :: a == GRANT ->
#ifdef DEADLINE_FROM_ANSWER
        deadline = T + LEASE;
#else
        deadline = sent + LEASE;
#endif
        last = 0;
        do
        /* a stamp: its clock within the grant, before its deadline, above its last */
        :: atomic {
             T < deadline && CLOCK(off) >= first && CLOCK(off) <= max && CLOCK(off) > last ->
             u = CLOCK(off);
             printf("MSC: lease: token %d stamps %d at T %d\n", tok, u, T);
             assert(!gone[tok]);  /* property 12 */
             t = 3 - tok;         /* the other lease */
             assert(issued_lo[t] == 0 || u < issued_lo[t] || u > issued_hi[t]);  /* property 1 */
             if :: issued_lo[tok] == 0 -> issued_lo[tok] = u :: else -> skip fi;
             issued_hi[tok] = u; last = u; u = 0; t = 0
           }
        :: !renewing && T > sent -> atomic { sent = T; req ! RENEW, h, tok, last; renewing = true }
        :: renewing && nempty(ans[h]) ->
           ans[h] ? a, t, u, m;
           renewing = false;
           if
           :: a == GRANT ->
#ifdef DEADLINE_FROM_ANSWER
              deadline = T + LEASE;
#else
              deadline = sent + LEASE;
#endif
              max = m; u = 0; m = 0; t = 0
           :: else -> u = 0; m = 0; t = 0; break  /* lost: a new lease, if any */
           fi
        :: !renewing -> req ! GIVE, h, tok, last; break
        :: break  /* stops without a word: killed, frozen for good */
        od;
        renewing = false
     :: else -> skip  /* taken: asked again later */
     fi;
     a = 0; t = 0; first = 0; max = 0; deadline = 0; last = 0; sent = 0; u = 0; m = 0
  :: else -> break
  od
}

active proctype Clock() {
end:
  do
  :: atomic { T < LTMAX -> T++ }
  od
}

init {
  byte a, b;
  if :: a = 0 :: a = 1 :: a = 2 fi;
  if :: b = 0 :: b = 1 :: b = 2 fi;
  atomic { run Holder(0, a); run Holder(1, b) }
}
