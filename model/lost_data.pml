/*
 * ZooKeeper losing what it acknowledged, and the fence that keeps the
 * cluster whole (docs/design.md, "When ZooKeeper loses its data";
 * property 8 of README.md).
 *
 * Two machines, each running the daemon (a run, then restarts: with its
 * state directory, or on a fresh one), one worker ID in the recycle pool and
 * one dense sequence. ZooKeeper is modelled by its guarantees, as in
 * snowflake.pml, plus two faults outside them:
 *   - a wipe: every node gone (a pod on an emptyDir, a new disk);
 *   - a restore: every node as a backup taken earlier in the run had it
 *     (the backup is itself an action, at any moment). With the runbook,
 *     `snowflaked cluster fence` runs right after the restore, at any moment
 *     after it: daemons may reach ZooKeeper first (-DRESTORE_WITHOUT_COMMAND
 *     leaves it out: spin then finds the window that docs/design.md bounds).
 * Either way each daemon's session is refused or gone: its next step on
 * ZooKeeper is with a fresh session, which checks the root first
 * (RefusedSessionWatch, Coordinator::check_root); a daemon that saw
 * nothing newer than the backup may go on in it unnoticed.
 *
 * The grace (coordinator.restore_grace_ms): what ZooKeeper grants over a
 * connection younger than it (a claim, a heartbeat's longer lease, a range)
 * is used only after it, and after the root or the sequence's node is read
 * again. A restore or a wipe restarts ZooKeeper, so every connection after
 * it is new (young). The timing it rests on: the command lands within the
 * grace of ZooKeeper's return (docs/operations.md: started before it, it
 * lands as ZooKeeper answers), so a grace ends only once the command is in.
 * Every grace here ends the moment it lands (a later end only holds back
 * what a daemon may do), and a connection made with no command owed has
 * none (after a wipe, or once the command is in, nothing relies on it).
 *
 * The vouch (cluster_vouch.hpp): `snowflaked cluster create` records in the
 * root the ZooKeeper run it made the cluster in (`era` here: a wipe or a
 * restore restarts ZooKeeper, a new run); a session made in that run and on
 * its first connection claims without the grace. A session that reconnects
 * may be in a later run, so it is judged by the run it is in now; the
 * backup keeps the vouch, the run does not.
 *
 * `cluster create` may run again at any moment (the compose file's one-shot
 * runs on every `up`). It remembers the cluster it made or found in its
 * state directory (cluster_memory.hpp) and refuses one ZooKeeper no longer
 * has (no root, or another ID); otherwise it does what it does the first
 * time: a missing root made, vouched for; a new_cluster fence a daemon put
 * up in this run lifted, vouched for. -DCREATE_FORGETS runs it with an
 * empty state directory each time (the one-shot on a tmpfs).
 *
 * Time is ticks; real time, ZooKeeper's time and the clocks are one (the
 * fence's margin and skew cover what snowflake.pml checks of clocks). The
 * lease is LEASE ticks, and reclaim_after equals it.
 *
 * What a daemon does (src/ names each step):
 *   - the root check on a new session (check_cluster_root with the daemon's
 *     RootIdentity): no root and the cluster known (its state directory):
 *     made again under its ID with a history_lost fence; no root and none
 *     known: made as a new cluster with a new_cluster fence; another ID:
 *     fenced, and that ID learned;
 *   - a claim of the free worker ID (RecyclePool::claim), the root read
 *     after it (read_migration_floor: its fence floors the generator);
 *   - a heartbeat (RecyclePool::heartbeat): our node gone or another's while
 *     our lease runs (vanished), or a write answered with a zxid at or below
 *     one we saw (ClusterHistory::follows): the loss is acted on
 *     (Coordinator::act_on_loss: the worker ID dropped, the fence raised,
 *     the sequence frozen, claimed again above the fence);
 *   - the reaper (reclaim_stale), issuing (IdGenerator::next under the
 *     lease, the time fence and the cluster's floor);
 *   - the sequence: a range of one number taken (take_range), handed out
 *     unless frozen; on a loss the buffer is dropped and the node frozen
 *     above what was held (SequenceSupplier::freeze_on_loss, restore_held).
 * The operator's `seq raise` thaws the sequence above every number handed
 * out (the application's data), once every daemon that held one has
 * dropped it (its confirmation). It is not one step: as raise_sequence
 * does, it reads the node (and its floor child: their versions), then
 * writes both in one multi conditional on those versions; a write that
 * loses (bad version) reads again and computes again with the same
 * `above`. So a loss and a daemon's freeze (or cluster fence's) may land
 * between its read and its write. `above` is what the application has
 * when the command first reads (what the operator can know then), be the
 * node frozen then (a raise after a loss) or thawed (a raise a loss may
 * overtake). A raise whose retry finds the node frozen, though its first
 * read found it thawed, stops and says so (exit 1: the loss may be newer
 * than the `above` chosen; the operator checks the application's data and
 * raises again). Its session: a wipe ends it (ZooKeeper comes back
 * knowing none); a restore ends it unless the copy has it (the raise
 * began before the backup): then it goes on, the worst case (ZooKeeper
 * may take such a session back).
 *
 * Mutants (spin must find a counterexample to property 8):
 *   -DNO_FENCE               no fence is written or honoured
 *   -DUNFENCED_GENESIS       a daemon that finds no root makes it unfenced
 *                            (a wipe looks like a new cluster)
 *   -DNO_FREEZE              a loss makes the sequence again above what the
 *                            daemon held, but does not freeze it
 *   -DRESTORE_WITHOUT_COMMAND  a restore with nobody running cluster fence
 *   -DNO_GRACE               what a new connection grants is used at once
 *   -DVOUCH_ANY_RUN          a vouch spares the grace whatever run it was
 *                            given in (a restored copy's too)
 *   -DVOUCH_ANY_CONNECTION   a session judged by the run it was made in,
 *                            though it reconnected since
 *   -DCREATE_FORGETS         cluster create keeps nothing between runs
 *   -DRAISE_THAWS_NEWER_FREEZE  (sequences) a raise whose retry finds the
 *                            node frozen, though its first read did not,
 *                            thaws it with the `above` chosen before the loss
 */

#ifndef TMAX
#define TMAX 5
#endif
#ifndef FAULTS
#define FAULTS 2
#endif
#define LEASE 2
#define TSPAN (TMAX + LEASE + 2)
#define NSEQ 6           /* sequence numbers 1 .. NSEQ - 1 */

#define max(a, b) ((a) > (b) -> (a) : (b))

byte now = 1;
byte faults;
byte tokens = 1;
byte ids = 1;            /* cluster IDs drawn */

/* ---- ZooKeeper's nodes ---- */
bool root;               /* <root> */
byte root_id;            /* its cluster_id */
byte fence;              /* its fence: no unit at or below it; 0 none */
bool inuse;              /* pool/inuse/0 */
byte in_token, in_ts;
bool notuse;             /* pool/notuse/0 */
byte no_floor;
byte seq_next;           /* sequences/s: next; 0: no such node */
bool seq_frozen;
byte era;                /* which history ZooKeeper holds: a wipe or a restore starts another */
byte root_vouch;         /* the root's vouch: era + 1 of cluster create's run; 0 none */
byte fence_new;          /* the fence is a new_cluster one, put up by a daemon that made the root
                            knowing none: era + 1 of the run it did (made_in_session); 0 not */
#ifdef SEQUENCES
/* seq raise under way (Operator), between its first read and its end */
bool raising;
bool r_moved;            /* the node written, restored or wiped since the raise's last read */
bool raise_cut;          /* its session gone (a wipe; a restore it was not in the backup of) */
bool raise_in_backup;    /* its session was there when the backup was taken */
/* A write of the node (a take; a freeze or a raise, with its floor child;
 * a create) moves its version past the one the raise read. */
#define node_written r_moved = r_moved || raising
#define raise_over raising = false; r_moved = false; raise_cut = false; raise_in_backup = false; \
                   above = 0; first_frozen = false
#endif
/* ... and a backup of them */
bool backed_up;
bool b_root, b_inuse, b_notuse, b_seq_frozen;
byte b_root_vouch;
byte b_root_id, b_fence, b_in_token, b_in_ts, b_no_floor, b_seq_next;

/* ---- each machine's daemon ---- */
bool up[2];
bool cut[2];             /* cannot reach ZooKeeper */
bool checked[2];         /* its session checked the root (a new session must) */
bool own[2];
byte token[2];
byte known[2];           /* <state_dir>/cluster.json: the cluster ID, 0 none */
byte seen[2];            /* the history its zxids come from (ClusterHistory's highest zxid) */
byte floor[2];           /* its generator: nothing at or below (the claim's floor, the fence) */
byte until[2];           /* its lease and time fence: the last confirmed write + LEASE */
byte held[2];            /* a sequence number buffered, 0 none */
bool young[2];           /* its connection is in its grace */
byte sess_era[2];        /* the run its session was made in */
bool settling[2];        /* held[m] was taken in the grace: not handed out yet */

/* ---- ghosts ---- */
byte lost_issued[TSPAN];   /* the token that issued in that unit with the worker ID */
bool lost_handed[NSEQ];    /* handed out */
byte handed_max;           /* the application's data: the largest number it has */
bool lost_once;            /* a wipe or a restore happened */
bool command_owed;         /* restored, and cluster fence not landed yet */
/* ---- cluster create's state directory, and its runs after the first ---- */
byte create_known;         /* the cluster ID it recorded; 0 none */
bool created_again;

#define spend_fault faults < FAULTS -> faults++
/* The vouch spares m's connection the grace: given in the run m's session
 * is in now (cluster_vouch.hpp: made in it, on its first connection). */
#if defined(VOUCH_ANY_RUN)
#define vouched(m) (root_vouch != 0)
#elif defined(VOUCH_ANY_CONNECTION)
#define vouched(m) (root_vouch == sess_era[m] + 1)
#else
#define vouched(m) (root_vouch == era + 1)
#endif
#ifdef NO_GRACE
#define connect_anew(m) skip
#else
#define connect_anew(m) young[m] = (command_owed && !vouched(m))
#endif
#ifdef NO_FREEZE
#define FREEZE_CHANGES false
#else
#define FREEZE_CHANGES (!seq_frozen && seq_next != 0)
#endif
#define conn(m) (up[m] && !cut[m])
#define go(m) (conn(m) && checked[m])

/* A write of m's answered: its zxid is above every one m saw while
 * ZooKeeper holds the history m saw. After a wipe or a restore it is at or
 * below them (ClusterHistory::follows: a loss), unless the new history has
 * already grown past them (then nothing shows, and m goes on in it). */
#define answered_from_behind(m) (seen[m] != era)
/* (Either branch may be taken then: the zxid may or may not show it.) */

#ifdef NO_FENCE
#define fence_to(t) skip
#define honour(m) skip
#else
#define fence_to(t) fence = max(fence, t); fence_new = 0
#define honour(m) floor[m] = (own[m] -> max(floor[m], fence) : 0)
#endif

/* Coordinator::act_on_loss and SequenceSupplier::freeze_on_loss: the
 * worker ID dropped (not given back), the fence raised, the sequence frozen
 * above what this daemon held. */
inline act_on_loss(m) {
  own[m] = false; floor[m] = 0; until[m] = 0;
  seen[m] = era;         /* ClusterHistory::report: zxids start over, from this history */
  fence_to(now + LEASE);
#ifdef SEQUENCES
  /* made again, or raised, above what it held (restore_held), and frozen:
   * it knows only what it held, not what the others handed out. One step
   * here, though the daemon writes it when ZooKeeper answers: each tag it
   * held stays frozen in the daemon until that write lands
   * (SequenceSupplier::restore_owed_), so nothing it hands out can tell. */
  /* written (freeze_sequence_above) unless nothing changes */
  r_moved = r_moved || (raising && ((held[m] != 0 && held[m] >= seq_next) || FREEZE_CHANGES));
  seq_next = (held[m] != 0 -> max(seq_next, held[m] + 1) : seq_next);
  held[m] = 0; settling[m] = false;
#ifndef NO_FREEZE
  seq_frozen = seq_frozen || seq_next != 0;
#endif
#endif
  honour(m)
}

inline issue(m) {
  atomic { conn(m) && own[m] && now < until[m] && now > floor[m] && lost_issued[now] != token[m] ->
    assert(lost_issued[now] == 0);
    printf("MSC: t=%d machine %d (token %d) issues in unit %d\n", now, m, token[m], now);
    lost_issued[now] = token[m] }
}

inline hand_out(m) {
  atomic { up[m] && held[m] != 0 && !settling[m] ->
    assert(!lost_handed[held[m]]);
    printf("MSC: t=%d machine %d hands out %d\n", now, m, held[m]);
    lost_handed[held[m]] = true; handed_max = max(handed_max, held[m]); held[m] = 0 }
}

proctype Daemon(byte m) {
start:
  atomic { up[m] = true; token[m] = tokens; tokens++; checked[m] = false; own[m] = false;
           floor[m] = 0; until[m] = 0; seen[m] = 0; held[m] = 0; settling[m] = false;
           sess_era[m] = era; connect_anew(m) }
  do
  /* ---- a new session: the root checked first (check_cluster_root) ---- */
  :: atomic { conn(m) && !checked[m] ->
       if
       :: !root && known[m] != 0 ->     /* wiped: made again, same ID, fenced */
          root = true; root_id = known[m]; fence_to(now + LEASE); act_on_loss(m);
          printf("MSC: t=%d machine %d finds the root gone: makes cluster %d again, fenced until %d\n",
                 now, m, root_id, fence)
       :: !root && known[m] == 0 ->     /* a new cluster, as far as it can tell */
          root = true; root_id = ids; ids++; known[m] = root_id;
#if !defined(UNFENCED_GENESIS) && !defined(NO_FENCE)
          fence = now + LEASE; fence_new = era + 1;   /* no root, no fence: new_cluster */
#endif
          printf("MSC: t=%d machine %d makes cluster %d, fenced until %d\n", now, m, root_id, fence)
       :: root && known[m] != 0 && root_id != known[m] ->   /* made again under us */
          known[m] = root_id; fence_to(now + LEASE); act_on_loss(m);
          printf("MSC: t=%d machine %d finds cluster %d in place of its own: fenced until %d\n",
                 now, m, root_id, fence)
       :: root && (known[m] == 0 || root_id == known[m]) -> known[m] = root_id
       fi;
       honour(m); checked[m] = true }

#ifndef SEQUENCES
  /* ---- a claim: one multi, then the root read (its fence) ---- */
  :: atomic { go(m) && !own[m] && notuse && !inuse ->
       notuse = false; inuse = true; in_token = token[m]; in_ts = now;
       if
       :: answered_from_behind(m) -> act_on_loss(m)   /* a history behind ours */
       :: true ->                               /* unnoticed (or none to notice) */
          /* in the grace: no lease until the heartbeat after it */
          seen[m] = era; own[m] = true; floor[m] = no_floor; until[m] = (young[m] -> 0 : now + LEASE);
          honour(m);
          printf("MSC: t=%d machine %d (token %d) claims the worker ID, floor %d\n",
                 now, m, token[m], floor[m])
       fi }

  /* ---- a heartbeat ---- */
  :: atomic { go(m) && own[m] ->
       if
       :: inuse && in_token == token[m] ->
          in_ts = now;
          if
          :: answered_from_behind(m) ->
             printf("MSC: t=%d machine %d: a heartbeat answered from an older history\n", now, m);
             act_on_loss(m)
          :: true -> seen[m] = era; honour(m);
             until[m] = (young[m] -> until[m] : now + LEASE)   /* the grace: none added */
          fi
       :: else ->
          if
          :: now < until[m] ->            /* vanished while the lease ran */
             printf("MSC: t=%d machine %d: its node vanished while its lease ran\n", now, m);
             act_on_loss(m)
          :: else -> own[m] = false; floor[m] = 0; until[m] = 0   /* lost: reclaimed after its lease */
          fi
       fi }

  /* ---- the root's watch ---- */
  :: atomic { go(m) && own[m] && fence > floor[m] -> honour(m) }

  /* ---- the reaper ---- */
  :: atomic { go(m) && inuse && in_token != token[m] && now - in_ts > LEASE ->
       inuse = false; notuse = true; no_floor = max(no_floor, in_ts + LEASE) }

  :: issue(m)
#else
  /* ---- the sequence: a range of one number, taken, then handed out ---- */
  :: atomic { go(m) && held[m] == 0 && seq_next != 0 && !seq_frozen && seq_next < NSEQ ->
       held[m] = seq_next; seq_next++; node_written;
       if
       :: answered_from_behind(m) -> act_on_loss(m)   /* the range is never handed out */
       :: true -> seen[m] = era; settling[m] = young[m];
          printf("MSC: t=%d machine %d takes %d\n", now, m, held[m])
       fi }
  /* the grace over: the node read again (SequenceSupplier::settle,
   * check_floor): gone, or behind what we took, is a loss; frozen, the
   * number is dropped (a gap) */
  :: atomic { go(m) && settling[m] && !young[m] ->
       settling[m] = false;
       if
       :: seq_next == 0 || seq_next <= held[m] -> act_on_loss(m)
       :: else -> if :: seq_frozen -> held[m] = 0 :: else fi
       fi }
  :: hand_out(m)
#endif

  /* ---- a crash, and the restart: with its state directory, or a fresh one ---- */
  :: atomic { spend_fault; up[m] = false; own[m] = false; held[m] = 0; settling[m] = false;
              printf("MSC: t=%d machine %d crashes\n", now, m) }
     if
     :: skip                     /* its state directory: it knows the cluster */
     :: known[m] = 0             /* a fresh one (a new pod) */
     fi;
     goto start
  od
}

#ifdef SEQUENCES
/* The operator, and a raise racing a freeze (the file's header says how
 * a raise runs). After a loss: seq raise of the frozen node above the
 * application's data (or seq create above it, for a tag ZooKeeper lost),
 * once every daemon that held a number of it has dropped it (its
 * confirmation, or the runbook's "every daemon back"). And a raise of the
 * thawed node, at any moment before the backup and before any loss
 * (daemons holding numbers or not): the one a loss may overtake. A raise
 * of a thawed node started later races nothing more: a loss after it ends
 * it (its session is not in the copy; after a wipe, in none), and a loss
 * before it took back only numbers the application had when it chose
 * `above`. One started after a wipe and before the backup would repeat
 * the first race behind one more fault: left out, a bound.
 *
 * The versions, abstracted: the multi goes through iff nothing wrote,
 * restored or wiped the node since the raise's last read (r_moved). A
 * restore may put back the very versions read (a backup taken after the
 * read, before any write): then the node is the one read, and reading it
 * again, as the model does, computes what the write would have written.
 * The ABA a restore could bring besides (the versions read come round
 * again, by later writes, over other contents) was checked once with the
 * versions as counters (the node's, its floor child's, the copy's; a
 * create starting them at 0; one raise of the thawed node at any moment):
 * no counterexample (44.6 million states). */
active proctype Operator() {
  byte above;
  bool first_frozen;
end:
  do
  /* seq raise --above N (raise_sequence), N what the application has
   * when it first reads: the node and its floor child read */
  :: atomic { seq_next != 0 && (seq_frozen -> held[0] == 0 && held[1] == 0 : !(backed_up || lost_once)) ->
       raising = true; above = handed_max; first_frozen = seq_frozen;
       printf("MSC: t=%d seq raise --above %d reads next %d (frozen %d)\n", now, above, seq_next, first_frozen) }
     do
     :: atomic { raise_cut ->
          printf("MSC: t=%d seq raise: its session is gone (exit 1)\n", now); raise_over; break }
     /* the multi at the versions read (the node unchanged since: what
      * was read is what is there): raised(), which thaws */
     :: atomic { !raise_cut && !r_moved ->
          seq_next = max(seq_next, above + 1); seq_frozen = false;
          printf("MSC: t=%d seq raise writes next %d, thawed (exit 0)\n", now, seq_next); raise_over; break }
     /* a bad version (or no node): read again */
     :: atomic { !raise_cut && r_moved ->
          r_moved = false;
          if
          :: seq_next == 0 ->   /* not reached here: only a wipe leaves no node, and it ends the
                                   session (a copy with no node is older than any raise that
                                   outlives its restore) */
             printf("MSC: t=%d seq raise: no such sequence (exit 1)\n", now); raise_over; break
#ifndef RAISE_THAWS_NEWER_FREEZE
          /* a freeze newer than the first read: the loss may be newer than
           * `above`. Stops without writing (exit 1), and says so */
          :: seq_next != 0 && seq_frozen && !first_frozen ->
             printf("MSC: t=%d seq raise: frozen while the raise ran (exit 1): check the application's data and raise again\n", now);
             raise_over; break
#endif
          :: else ->
             printf("MSC: t=%d seq raise: raced; reads next %d (frozen %d) again\n", now, seq_next, seq_frozen)
          fi }
     od
  /* seq create above the application's data, for a tag ZooKeeper lost:
   * one create, refused if the node is there */
  :: atomic { lost_once && seq_next == 0 && held[0] == 0 && held[1] == 0 ->
       seq_next = handed_max + 1; seq_frozen = false;
       printf("MSC: t=%d seq create: from %d\n", now, seq_next) }
  od
}
#endif

active proctype World() {
  byte m;
end:
  do
#ifndef SEQUENCES      /* the sequence's numbers do not depend on time */
  :: atomic { now < TMAX -> now++ }
#endif
  :: atomic { spend_fault; select(m : 0 .. 1); cut[m] = !cut[m];
              if :: !cut[m] -> connect_anew(m) :: else fi; m = 0 }
  /* a backup of ZooKeeper's data, at any moment */
  :: atomic { !backed_up -> backed_up = true;
       b_root = root; b_root_id = root_id; b_fence = fence; b_inuse = inuse; b_in_token = in_token;
       b_in_ts = in_ts; b_notuse = notuse; b_no_floor = no_floor; b_seq_next = seq_next;
       b_seq_frozen = seq_frozen; b_root_vouch = root_vouch;
#ifdef SEQUENCES
       raise_in_backup = raising;
#endif
       printf("MSC: t=%d a backup of ZooKeeper's data\n", now) }
  /* ZooKeeper back empty */
  :: atomic { spend_fault; lost_once = true;
       root = false; root_id = 0; fence = 0; inuse = false; in_token = 0; in_ts = 0; root_vouch = 0;
       fence_new = 0;
       notuse = true; no_floor = 0; seq_next = 0; seq_frozen = false; era++;
#ifdef SEQUENCES
       r_moved = raising; raise_cut = raising;   /* its session unknown */
#endif
       checked[0] = false; checked[1] = false; connect_anew(0); connect_anew(1);
       printf("MSC: t=%d ZooKeeper comes back empty\n", now) }
  /* ZooKeeper back from the backup; the runbook's command owed */
  :: atomic { backed_up && spend_fault; lost_once = true;
       root = b_root; root_id = b_root_id; fence = b_fence; inuse = b_inuse; in_token = b_in_token;
       in_ts = b_in_ts; notuse = b_notuse; no_floor = b_no_floor; seq_next = b_seq_next;
       seq_frozen = b_seq_frozen; root_vouch = b_root_vouch; era++;
#ifdef SEQUENCES
       r_moved = raising; raise_cut = raise_cut || (raising && !raise_in_backup);
#endif
       /* A new_cluster fence the copy has is of an older run: lift_new_cluster_fence
        * would lift it without the vouch. Left out: the copy holds a root a daemon
        * made, so create remembers another cluster (here always the first) and
        * refuses before any lift. */
       fence_new = 0;
#ifndef RESTORE_WITHOUT_COMMAND
       command_owed = true;
#endif
       checked[0] = false; checked[1] = false; connect_anew(0); connect_anew(1);
       printf("MSC: t=%d ZooKeeper comes back from the backup\n", now) }
  /* snowflaked cluster fence: the root made if the copy has none (under a
   * new ID: the daemons that knew the old one find it replaced), fenced;
   * every sequence frozen */
  :: atomic { command_owed -> command_owed = false; young[0] = false; young[1] = false;
       if
       :: !root -> root = true; root_id = ids; ids++
       :: else
       fi;
       fence_to(now + LEASE);
#ifdef SEQUENCES
       /* freeze_sequences: written unless frozen already */
       r_moved = r_moved || (raising && seq_next != 0 && !seq_frozen);
       seq_frozen = seq_frozen || seq_next != 0;
#endif
       printf("MSC: t=%d cluster fence: fenced until %d, the sequence frozen\n", now, fence) }
  /* cluster create again (the compose one-shot on another `up`); a run
   * that changes nothing (refused, or nothing to do) is a step to the same
   * state, and may come at any moment */
  :: atomic { !created_again ->
       m = create_known;
#ifdef CREATE_FORGETS
       m = 0;
#endif
       if
       :: !root && m == 0 ->
          root = true; root_id = ids; ids++; notuse = true; root_vouch = era + 1;
          create_known = root_id; created_again = true;
          printf("MSC: t=%d cluster create again: makes cluster %d, vouched\n", now, root_id)
       :: root && (m == 0 || root_id == m) && fence_new == era + 1 ->
          fence = 0; fence_new = 0; root_vouch = era + 1;   /* lift_new_cluster_fence */
          create_known = root_id; created_again = true;
          printf("MSC: t=%d cluster create again: lifts cluster %d's new_cluster fence\n", now, root_id)
       :: else   /* refused: ZooKeeper lost the cluster it knows; or nothing to do */
       fi;
       m = 0 }
  od
}

init {
  /* The first install: snowflaked cluster create, vouched (no fence), and the sequence. */
  atomic { root = true; root_id = ids; ids++; notuse = true; root_vouch = era + 1;
           create_known = root_id;
#ifdef SEQUENCES
           seq_next = 1;
#endif
           run Daemon(0); run Daemon(1) }
}
