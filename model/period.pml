/*
 * A sequence that restarts each period (an invoice number per day) as a
 * checked model (README.md here, "Periods").
 *
 * The tag's definition node, <root>/sequences/<tag>, holds what the
 * operator set and `removed`: the periods before it are over and their
 * nodes gone. Each period has a node of its own, <root>/sequences/<tag>@<key>,
 * made by the first daemon whose clock reaches the period, starting at the
 * sequence's start value (1 here), with one multi: a check of the definition
 * at the version the daemon read, and the create. A number is taken from a
 * period's node by one write (sequence.pml checks the takes themselves; here
 * a take is one atomic step on the node).
 *
 * Time: ZooKeeper's clock T ticks on; each daemon's clock is T plus an
 * offset within the skew bound (coordinator.max_skew_ms: a daemon whose
 * clock is further off serves no period at all). The period a daemon serves
 * is its clock's. Any daemon may remove the oldest period's node (the
 * remover): once ZooKeeper's clock is past the period's end plus the skew
 * bound, one multi raises `removed` in the definition and deletes the node.
 * A daemon may be held up between any two steps (frozen, a slow thread).
 *
 * Properties:
 *   6. no number of a period is handed out twice (a ghost bit per period
 *      and number, kept across the node's removal): assertion "handed_out_in";
 *  10. a daemon is never refused its current period: a period it finds
 *      removed is one its clock has left by then: assertion "period_left".
 *
 * Mutants (spin must find a counterexample to each):
 *   -DCREATE_WITHOUT_CHECK  a period's node is made without the definition's
 *                           version in the multi: a daemon that read the
 *                           definition before a removal makes the removed
 *                           period again, from 1 (violates 6)
 *   -DCREATE_OVERWRITES     a period's node written whether or not another
 *                           daemon made it first (a set, not a create):
 *                           the race to make it restarts the period (violates 6)
 *   -DNO_SKEW_BOUND         the remover waits only for the period's end by
 *                           ZooKeeper's clock: a daemon whose clock lags is
 *                           refused the period it is in (violates 10)
 */

#define LEN 2          /* ticks a period lasts */
#define PERIODS 4      /* periods 0 .. PERIODS - 1 */
#define TMAX 7         /* ZooKeeper's clock runs 0 .. TMAX: periods 0 .. 3 */
#define SKEW 1         /* a daemon's clock is within T - SKEW .. T + SKEW */
#define NUM 2          /* numbers a period has room for (1 .. NUM) */
#define ASKS 3         /* requests each daemon serves */

/* ---- ZooKeeper ---- */
byte T;                      /* its clock */
byte version;                /* the definition's */
byte removed;                /* periods < removed are over, their nodes gone */
bool exists[PERIODS];        /* a period's node */
byte next[PERIODS];          /* its first number not taken */

/* ---- ghosts ---- */
bit handed_out_in[PERIODS * (NUM + 1)];

/* A daemon's clock: ZooKeeper's plus its offset (0, 1, 2: -1, 0, +1 tick). */
#define CLOCK(off) ((T + off >= SKEW) -> (T + off - SKEW) : 0)
#define PERIOD_AT(t) ((t) / LEN)

proctype Daemon(byte m; byte off) {
  byte asks, p, v, r, n;
  bool period_left;
  do
  :: asks < ASKS ->
     asks++;
     /* its clock says which period (a request's); then the definition
        read (the supplier's, which may be held up in between) */
     atomic { p = PERIOD_AT(CLOCK(off));
              printf("MSC: period: daemon %d (clock %d) serves period %d\n", m, CLOCK(off), p) }
     atomic { v = version; r = removed;
              printf("MSC: period: daemon %d reads the definition: v%d, periods < %d removed\n",
                     m, v, r) }
     if
     :: p >= PERIODS -> break
     :: p < r ->
        /* 503: the period is over here too */
        atomic { printf("MSC: period: daemon %d refused period %d (removed), its clock now %d\n",
                        m, p, CLOCK(off));
                 period_left = PERIOD_AT(CLOCK(off)) > p;
                 assert(period_left);  /* property 10 */
                 period_left = false }
     :: else ->
        /* the period's node made if it is not there: check + create */
        atomic {
          if
#ifdef CREATE_OVERWRITES
          :: exists[p] && version == v -> next[p] = 1;
             printf("MSC: period: daemon %d writes period %d's node over\n", m, p)
#else
          :: exists[p] -> skip
#endif
#ifdef CREATE_WITHOUT_CHECK
          :: !exists[p] -> exists[p] = true; next[p] = 1;
#else
          :: !exists[p] && version == v -> exists[p] = true; next[p] = 1;
#endif
             printf("MSC: period: daemon %d makes period %d's node\n", m, p)
          :: else -> printf("MSC: period: daemon %d: the definition moved (v%d); read again\n",
                            m, version)
          fi
        }
        /* a number taken from the node, and handed out */
        atomic {
          if
          :: exists[p] && next[p] <= NUM ->
             n = next[p]; next[p]++;
             printf("MSC: period: daemon %d hands out %d of period %d\n", m, n, p);
             assert(!handed_out_in[p * (NUM + 1) + n]);  /* property 6 */
             handed_out_in[p * (NUM + 1) + n] = 1
          :: else -> skip  /* gone meanwhile, or exhausted: nothing handed out */
          fi;
          n = 0
        }
     fi;
     atomic { p = 0; v = 0; r = 0 }
  :: asks >= ASKS -> break
  od
}

/* Any daemon's removal of the oldest period: once ZooKeeper's clock is past
   its end and the skew bound; `removed` and the delete in one multi. */
active proctype Remover() {
end:
  do
  :: atomic {
#ifdef NO_SKEW_BOUND
       removed < PERIODS && T >= (removed + 1) * LEN ->
#else
       removed < PERIODS && T >= (removed + 1) * LEN + SKEW ->
#endif
       printf("MSC: period: period %d removed at T %d\n", removed, T);
       exists[removed] = false; next[removed] = 0; removed++; version++ }
  od
}

active proctype Clock() {
end:
  do
  :: atomic { T < TMAX -> T++ }
  od
}

init {
  byte a, b;
  if :: a = 0 :: a = 1 :: a = 2 fi;
  if :: b = 0 :: b = 1 :: b = 2 fi;
  atomic { run Daemon(0, a); run Daemon(1, b) }
}
