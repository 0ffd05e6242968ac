/*
 * snowflaked's worker-ID protocol as a checked model (see README.md here).
 *
 * Two machines, each running the daemon (a run, then one restart after a
 * crash, a stop or a clone), and one worker ID: in the recycle pool, or
 * (-DSEQUENTIAL) one sequential identity both machines were given by mistake.
 * ZooKeeper is modelled by its guarantees: every operation, a multi too, is
 * applied atomically and checks its versions; one session's requests are
 * answered in order (a daemon waits for each answer); ephemeral nodes go when
 * their session ends; an answer may be lost after the write was applied.
 *
 * Time is small integer ticks. `now` is real time, ZooKeeper's time and the
 * monotonic clocks (one rate: the config's safety margin covers rates, so the
 * model needs none). Both wall clocks start right and may step to any reading
 * within SKEW ticks of real time (a step of up to 2 SKEW ticks either way).
 * In each tick a running daemon does what its threads do in one heartbeat
 * interval: one claim (or takeover) attempt, one heartbeat, one pass of the
 * reaper if its session holds the reaper's role (one connected daemon, elected
 * through ZooKeeper: ReaperRole), and it issues in every unit it may (the
 * most IDs: the worst case);
 * in any order, interleaved with the other daemon and the world. Time moves
 * on only when both have done so, or are cut off, stalled or down.
 *
 * Faults, from one budget (FAULTS): a machine cut off from ZooKeeper or back;
 * a clock step; a lost answer; a daemon stalled between a read and its write
 * (SIGSTOP, a long pause; it resumes at any later moment); a crash (kill -9)
 * at any step; a clean stop; machine 1 replaced by a clone of machine 0 (its
 * state directory copied). Free, as ZooKeeper or the daemon does them
 * anyway: the session of a cut-off, stalled or dead daemon ends; a new
 * session after ours ended; the restart after a crash, stop or clone.
 *
 * Every step names the function of src/ it mirrors.
 *
 * Mutants (each one a rule taken out; spin must find a counterexample):
 *   -DNO_TIME_FENCE        IdGenerator::set_fence_ms is never called
 *   -DTAKEOVER_BY_TOKEN    a token in the state file is proof enough (no StateDir::proves_writer_dead)
 *   -DUNVERSIONED_RECLAIM  RecyclePool::reclaim_stale removes inuse/<id> at any version
 *   -DCLAIM_WITHOUT_MOVES  RecyclePool::commit_claim does not check the move counter
 *   -DHEARTBEAT_WITHOUT_MOVES  RecyclePool::heartbeat does not check the move counter
 *   -DNO_LEASE             neither the generator nor the router checks the Lease
 *                          (property 3 must catch it)
 * and of the migration floor (property 5 must catch each):
 *   -DCLAIM_IGNORES_FLOOR  a claim (or takeover) is installed without reading the root after it
 *   -DHEARTBEAT_IGNORES_FLOOR  a heartbeat's lease is used without reading the root after it
 *   -DFLOOR_WITHOUT_CONFIRMATION  `pool floor` exits 0 without waiting for owners' confirmations
 * and of the reaper's role:
 *   -DREAP_WITHOUT_ROLE    a reclaim's multi goes through whatever session the daemon has now,
 *                          not only the one that read while holding the role (property 9)
 *   -DREAPER_OUTLIVES_SESSION  a session's end does not free the role (with -DLIVENESS
 *                          -DREAP_LIVENESS: an acceptance cycle of `reaped`)
 */

#ifndef TMAX
#define TMAX 5              /* ticks of real time */
#endif
#ifndef FAULTS
#define FAULTS 2
#endif
#define LEASE 2             /* coordinator.lease_timeout */
#define RECLAIM LEASE       /* coordinator.reclaim_after = lease_timeout + safety_margin */
#define SKEW 2              /* the wall clock reads now - SKEW .. now + SKEW */
#define TEND (TMAX + SKEW - 1)   /* real time runs SKEW .. TEND: no wall clock reads below 0 */
#define TSPAN (TEND + SKEW + 1)  /* the wall clock's largest reading + 1 */
#define NSESS (6 + FAULTS)  /* 4 runs + a session after each expiry (one per fault) + 1 */

#define max(a, b) ((a) > (b) -> (a) : (b))
#define wall(m) (now + skew[m] - SKEW)
#define conn(m) (!cut[m] && sess_live[sess[m]])
#define connected conn(m)

/* ---- the world ---- */
byte now = SKEW;
byte skew[2] = SKEW;        /* 0 .. 2 SKEW; both clocks start right (NTP) */
bool cut[2];                /* machine m cannot reach ZooKeeper */
byte cut_at[2];             /* ghost: since when */
byte faults;                /* used from the budget */
byte tokens = 1;            /* OwnerToken::fresh: one per run */
byte sessions = 1;          /* ZkSession::connect: one per session */
bool sess_live[NSESS];
byte orphan[2];             /* the session of a dead run on machine m, not yet ended */
byte did[2];                /* what machine m's daemon did this tick (one of each a tick) */
bool cloned;                /* machine 1 was replaced by a clone of machine 0 */
bool stall[2];              /* machine m's daemon is stopped (SIGSTOP, a long pause) */
byte migrated;              /* ghost: the floor `pool floor` confirmed when it exited 0, 0 before */

/* ---- ZooKeeper's nodes ---- */
bool filled;                /* <root>/pool {"complete": true} */
bool notuse;                /* <root>/pool/notuse/0 */
byte no_floor;              /* its floor */
byte fill_lock;             /* <root>/pool/init-lock: the session holding it, 0 none */
byte moves;                 /* the version of <root>/pool/inuse: the move counter */
#ifdef SEQUENTIAL
bool inuse = true;          /* <root>/forever/<name>-0 */
#else
bool inuse;                 /* <root>/pool/inuse/0 */
#endif
byte in_token, in_ver, in_ts, in_hwm, in_floor, in_mtime;
byte in_inc;                /* its czxid */
byte incs;                  /* the last czxid: a new one for every create */
#ifdef SEQUENTIAL
bool in_lease = true;       /* lease_ms is not 0 (a release sets 0) */
#else
bool in_lease;
#endif
bool in_released;           /* pool: {"released": true}, a clean stop's mark (lease_ms 0) */
byte alive;                 /* <root>/alive/0: the session holding it, 0 none */
byte root_floor;            /* <root> {"floor"}: the migration floor, 0 none (only rises) */
byte acked[NSESS];          /* <root>/floor_acks/<session>: the floor it confirmed, 0 none */
byte reaper;                /* the session holding the lowest candidate under <root>/pool/reapers
                             * (the reaper's role, as its daemon learnt it), 0 none */

/* ---- each machine's daemon run: its coordinator and generator ---- */
bool up[2];                 /* a run is going */
bool pending[2];            /* it has read, and its write is to come */
bool own[2];                /* Coordinator: the generator is open */
byte token[2], sess[2];
byte inc[2];                /* the czxid of the node it owns */
byte floor[2];              /* IdGenerator: nothing at or below */
byte last[2];               /* IdGenerator: the last unit issued */
byte fence[2];              /* IdGenerator::set_fence_ms: nothing above (rule 1) */
byte lease_until[2];        /* Lease: nothing from then on (monotonic) */
byte cfl[2];                /* IdGenerator::raise_migration_floor: nothing at or below */

/* ---- each machine's state directory (StateDir, worker.json) ---- */
byte sf_token[2];           /* the owner token of the run that wrote it, 0 none */
byte sf_reserved[2];        /* TimeReservation: no unit above it was issued */
byte sf_origin[2];          /* the machine whose run wrote it (a copy keeps its origin) */

/* ---- ghosts, for the properties ---- */
byte issued[TSPAN];         /* the token that issued with the worker ID in that unit, 0 none */
#define owning (own[0] + own[1])   /* runs that think they own the worker ID (liveness) */
byte role_gen;              /* the role's holdings so far: one more each time a session takes it */

#define spend_fault faults < FAULTS -> faults++

/* What `pool floor` waits for (owner_confirmed: pool.pml, sequential.pml). */
#ifdef FLOOR_WITHOUT_CONFIRMATION
#define floor_confirmed true
#else
#define floor_confirmed owner_confirmed
#endif

/* The liveness run: ZooKeeper answers (no partitions, no stalls) and runs
 * end only by... nothing: a crash whose claim's answer was lost holds the
 * worker ID until the reaper's reclaim_after, which the model's bounded time
 * cannot always reach. Its faults are lost answers and clock steps. */
#ifdef LIVENESS
#ifdef REAP_LIVENESS
#define CRASHES (m == 0)    /* the reaper's liveness: machine 0 may die, and stays down */
#define RESTARTS (m != 0)
#else
#define CRASHES false
#endif
#else
#define CRASHES true
#endif
#ifndef RESTARTS
#define RESTARTS true
#endif

/* The reaper's role (ReaperRole): every session of a daemon has its
 * candidate under <root>/pool/reapers from its start; the lowest live one,
 * the oldest session, holds the role. A session that holds it keeps it
 * until it ends. */
inline candidate(s) {
  if :: sess_live[s] && (reaper == 0 || s < reaper) -> reaper = s :: else fi
}
inline next_reaper() {
  candidate(sess[0]); candidate(sess[1]); candidate(orphan[0]); candidate(orphan[1]);
  if :: reaper != 0 -> role_gen++;
        printf("MSC: t=%d session %d holds the reaper's role\n", now, reaper)
  :: else fi
}
#ifndef SEQUENTIAL
#define take_vacant_role if :: reaper == 0 -> next_reaper() :: else fi
#else
#define take_vacant_role skip
#endif

/* A session ends (ZooKeeper removes its ephemeral nodes). */
inline expire(s) {
  printf("MSC: t=%d session %d ends (its ephemeral nodes go)\n", now, s);
  sess_live[s] = false;
  if :: alive == s -> alive = 0 :: else fi;
  if :: fill_lock == s -> fill_lock = 0 :: else fi;
#if !defined(REAPER_OUTLIVES_SESSION) && !defined(SEQUENTIAL)
  if :: reaper == s -> reaper = 0; next_reaper() :: else fi;   /* its candidate goes: the next one takes over */
#endif
  acked[s] = 0
}

/* A run may issue in this tick (IdGenerator::next's checks, the router's
 * lease check). An owner issues in every unit it may: the worst case. */
#ifdef NO_TIME_FENCE
#define fenced(m) true
#else
#define fenced(m) (wall(m) <= fence[m])
#endif
#ifdef NO_LEASE
#define leased(m) true
#else
#define leased(m) (now < lease_until[m])
#endif
#define may_issue(m) (own[m] && !stall[m] && leased(m) && wall(m) > last[m] && fenced(m) && wall(m) > cfl[m] && \
                      wall(m) < TSPAN)

/* The answer to a write that was applied: delivered, or lost. */
inline answer(got) {
  if
  :: got = true
  :: spend_fault; got = false
  fi
}

/* ---- the issuing of one ID: router issue_ids -> IdGenerator::next ---- */
inline issue(m) {
  atomic {
    may_issue(m) ->
    /* (1) no two runs issue with one worker ID in one time unit */
    assert(issued[wall(m)] == 0 || issued[wall(m)] == token[m]);
    /* (2) no ID at or below its floor */
    assert(wall(m) > floor[m]);
    /* (3) an owner cut off longer than its lease issues nothing */
    assert(!cut[m] || now < cut_at[m] + LEASE);
    /* (5) once `pool floor` has exited 0, nothing at or below its floor */
    assert(migrated == 0 || wall(m) > migrated);
    printf("MSC: t=%d machine %d (token %d) issues in unit %d (floor %d, fence %d, lease until %d)\n",
           now, m, token[m], wall(m), floor[m], fence[m], lease_until[m]);
    issued[wall(m)] = token[m];
    last[m] = wall(m);
    /* TimeReservation: the state file holds it before it is issued */
    sf_reserved[m] = max(sf_reserved[m], last[m]); sf_token[m] = token[m]; sf_origin[m] = m
  }
}

/* The root, read on our session after a write that grants a lease
 * (Coordinator::read_migration_floor): it sees any floor written before our
 * write (a later read can only see a higher one). */
#define read_root_floor cfl[m] = max(cfl[m], root_floor)

/* Coordinator::install: the generator opens above the floor, with the lease
 * from the send and the time fence from the confirmed ts (rule 1); the
 * cluster's migration floor read after the claim (or takeover). */
inline install(floor_, ts_, sent_) {
#ifndef CLAIM_IGNORES_FLOOR
  read_root_floor;
#endif
  own[m] = true; inc[m] = in_inc;
  floor[m] = floor_; last[m] = max(last[m], floor_);
  fence[m] = ts_ + LEASE; lease_until[m] = sent_ + LEASE;
  /* TimeReservation::attach: the record, never below the floor */
  sf_token[m] = token[m]; sf_origin[m] = m; sf_reserved[m] = max(sf_reserved[m], floor_)
}

/* Coordinator::lose: the generator closes. What only an owner uses is
 * forgotten (the model's states then differ only in what matters). */
inline lose() {
  own[m] = false; floor[m] = 0; fence[m] = 0; lease_until[m] = 0; inc[m] = 0
}

/* The inuse node is deleted: its fields are gone. */
inline delete_inuse() {
  inuse = false; in_token = 0; in_ver = 0; in_ts = 0; in_hwm = 0; in_floor = 0; in_mtime = 0; in_inc = 0;
  in_released = false
}

/* Coordinator::start: a fresh owner token and session. */
inline start_run() {
  atomic {
    if
    :: cloned ->   /* machine 1 now runs from a copy of machine 0's disk */
       sf_token[1] = sf_token[0]; sf_reserved[1] = sf_reserved[0]; sf_origin[1] = sf_origin[0];
       cloned = false
    :: else
    fi;
    token[m] = tokens; tokens++;
    assert(sessions < NSESS); sess[m] = sessions; sess_live[sessions] = true; sessions++;
    take_vacant_role;
    lose(); last[m] = 0; cfl[m] = 0;
    up[m] = true; pending[m] = false; unsure = false; unsure_sent = 0;
    /* StateDir::proves_writer_dead: the record counts only if this machine's
     * earlier run wrote it (same boot, same directory) and is gone */
#ifdef TAKEOVER_BY_TOKEN
    proof = sf_token[m] != 0
#else
    proof = sf_token[m] != 0 && sf_origin[m] == m
#endif
  }
}

/* The end of a run without a word to ZooKeeper: the process is gone at
 * once; its session lingers until ZooKeeper ends it; the state file stays. */
inline die() {
  lose(); last[m] = 0; up[m] = false; stall[m] = false; pending[m] = false; unsure = false; unsure_sent = 0;
  if :: sess_live[sess[m]] -> orphan[m] = sess[m] :: else fi;
  runs++; clear()
}

/* kill -9, at any step */
inline crash() {
  atomic {
    CRASHES && faults < FAULTS -> faults++;
    printf("MSC: t=%d machine %d (token %d) is killed\n", now, m, token[m]);
    die()
  }
  goto restart
}

/* Machine 1 is replaced by a clone of machine 0 (a copied VM image, a
 * restored snapshot): its daemon starts again with machine 0's state dir. */
inline clone() {
  atomic {
    CRASHES && m == 1 && runs == 0 && sf_token[0] != 0 && faults < FAULTS -> faults++;
    printf("MSC: t=%d machine 1 is replaced by a clone of machine 0 (state file: token %d, reserved %d)\n",
           now, sf_token[0], sf_reserved[0]);
    die(); cloned = true
  }
  goto restart
}

/* The root's watch fired (or a new session): Coordinator::read_migration_floor
 * raises the generator's floor, then confirm_migration_floor writes our
 * session's ack, if we own a worker ID. Any moment after the floor was
 * written: a watch's event comes when it comes. */
inline read_floor() {
  atomic { !stall[m] && connected && (cfl[m] < root_floor || (own[m] && acked[sess[m]] < cfl[m])) ->
    cfl[m] = root_floor;
    if
    :: own[m] -> acked[sess[m]] = cfl[m];
       printf("MSC: t=%d machine %d (token %d) confirms the floor %d (session %d)\n", now, m, token[m], cfl[m], sess[m])
    :: else -> printf("MSC: t=%d machine %d reads the floor %d\n", now, m, cfl[m])
    fi }
}

#ifndef SEQUENTIAL
#include "pool.pml"
#else
#include "sequential.pml"
#endif

/* The world's own moves: time, partitions, clock steps, stalls, sessions that end. */
active proctype World() {
  byte m, to;
end:
  do
  /* time moves on once each running daemon has done what it does in a tick */
  :: atomic { now < TEND && !due(0) && !due(1) -> now++; did[0] = 0; did[1] = 0 }
  :: atomic { spend_fault; select(m : 0 .. 1); select(to : 1 .. 2 * SKEW);
              skew[m] = (skew[m] + to) % (2 * SKEW + 1);
              printf("MSC: t=%d machine %d's wall clock steps to %d (real %d)\n", now, m, wall(m), now);
              m = 0; to = 0 }
#ifndef LIVENESS   /* the liveness run: ZooKeeper answers */
  :: atomic { spend_fault; select(m : 0 .. 1); cut[m] = !cut[m]; cut_at[m] = (cut[m] -> now : 0);
              printf("MSC: t=%d machine %d cut off from ZooKeeper: %d\n", now, m, cut[m]); m = 0 }
  :: atomic { pending[0] && !stall[0] -> spend_fault; stall[0] = true; printf("MSC: t=%d machine 0's daemon stalls\n", now) }
  :: atomic { pending[1] && !stall[1] -> spend_fault; stall[1] = true; printf("MSC: t=%d machine 1's daemon stalls\n", now) }
  /* snowflaked pool floor: raises the root's floor (IDs of the old system
   * up to the next unit), then exits 0 once every owner that may still
   * issue has confirmed it or its lease has run out (unconfirmed_owners;
   * its reads in the order that makes each later one stricter: one step) */
  :: atomic { root_floor == 0 && spend_fault; root_floor = now + 1;
              printf("MSC: t=%d pool floor: the root's floor is %d\n", now, root_floor) }
  :: atomic { root_floor != 0 && migrated == 0 && floor_confirmed -> migrated = root_floor;
              printf("MSC: t=%d pool floor exits 0: no ID at or below %d from now on\n", now, migrated) }
#endif
  :: atomic { stall[0] -> stall[0] = false }
  :: atomic { stall[1] -> stall[1] = false }
  /* ZooKeeper ends the session of a daemon it does not hear from */
  :: atomic { (cut[0] || stall[0] || !up[0]) && sess_live[sess[0]] -> expire(sess[0]) }
  :: atomic { (cut[1] || stall[1] || !up[1]) && sess_live[sess[1]] -> expire(sess[1]) }
  :: atomic { orphan[0] != 0 -> expire(orphan[0]); orphan[0] = 0 }
  :: atomic { orphan[1] != 0 -> expire(orphan[1]); orphan[1] = 0 }
  od
}

init {
  atomic { run Daemon(0); run Daemon(1) }
}

#ifdef LIVENESS
#ifdef REAP_LIVENESS
/* (4) and of the reaper: a stale worker ID (its owner's session gone, its
 * node older than reclaim_after) is eventually reclaimed, though machine 0,
 * the reaper maybe, dies for good (spin checks one formula: this one replaces
 * `claimed`) */
#define stale (inuse && alive == 0 && now - in_mtime > RECLAIM)
ltl reaped { [] (stale -> <> !stale) }
#else
/* (4) a free worker ID is eventually claimed (ZooKeeper answers: the
 * liveness run has no partitions) */
ltl claimed { [] (free -> <> (owning > 0)) }
#endif
#endif
