/* The recycle strategy (coordinator.type "recycle"): the daemon's runs on
 * machine m, one after another. Included by snowflake.pml.
 *
 * Each ZooKeeper operation is a read, then a write that ZooKeeper applies
 * atomically (a multi) only if what was read still holds; the other daemon
 * and the world move in between. A daemon does one operation at a time and
 * at most one of each kind a tick (its threads wait between them).
 * Temporaries are cleared after use, so that states differing only in them
 * are one state. */

#define CLAIMED 1   /* did[m] bits: a claim or takeover this tick */
#define BEAT 2      /* a heartbeat */
#define REAPED 4    /* a pass of the reaper */

#define free notuse

#define go (!stall[m])
/* the reaper may return the node: stale by ZooKeeper's time, or marked by
 * its owner's clean stop (RecyclePool::read_stale) */
#define reclaimable (in_released || now - in_mtime > RECLAIM)
/* `pool floor`'s check of the worker ID: no owner, or the session holding
 * its alive node confirmed the floor, or none holds it and the lease of
 * the node's last write has run out (ZooKeeper's time) */
#define owner_confirmed (!inuse || (alive != 0 && acked[alive] >= root_floor) || \
                         (alive == 0 && now >= in_mtime + LEASE))
/* what daemon m still has to do in this tick (the world's clock waits); the
 * reaper's pass: only the daemon whose session holds the role */
#define reap_due(m) (reaper == sess[m] && inuse && !(own[m] && in_inc == inc[m]) && reclaimable && \
                     !(did[m] & REAPED))
#define due(m) (up[m] && !stall[m] && (may_issue(m) || pending[m] || (!sess_live[sess[m]] && !cut[m]) || \
                 (conn(m) && ((own[m] && !(did[m] & BEAT)) || (!own[m] && !(did[m] & CLAIMED)) || reap_due(m)))))

#ifdef LIVENESS
#ifdef REAP_LIVENESS
/* time has ended: the reaper tries on. A claim does not: at a pool that
 * stays exhausted it would try on forever, a cycle that weak fairness (to
 * the process, not to each of its steps) allows though the daemon reaps too */
#define once(bit) ((now == TEND && bit == REAPED) || !(did[m] & bit))
#else
#define once(bit) (now == TEND || !(did[m] & bit))   /* time has ended: try on */
#endif
#else
#define once(bit) (!(did[m] & bit))
#endif

/* a new session after ours ended: Coordinator::connect */
inline new_session() {
  atomic { go && !sess_live[sess[m]] && !cut[m] -> assert(sessions < NSESS);
    sess[m] = sessions; sess_live[sessions] = true; sessions++; take_vacant_role;
    printf("MSC: t=%d machine %d connects again: session %d\n", now, m, sess[m]) }
}

inline clear() { c = 0; v = 0; f = 0; got = false; rts = 0; rhwm = 0; rfloor = 0; rsess = 0; rgen = 0; rrel = false }

proctype Daemon(byte m) {
  byte runs;                 /* runs ended: a crash or a stop, then one restart */
  bool unsure, proof, got;
  byte unsure_sent, c, v, f, rts, rhwm, rfloor;
  byte rsess, rgen;          /* the reaper's reading: taken on session rsess, in the role's holding rgen */
  bool rrel;                 /* and whether the node it read was marked released */

start:
  start_run();

  /* RecyclePool::ensure: the pool is filled once, under an ephemeral lock;
   * a lock our own session holds (a create whose answer was lost) is ours */
  do
  :: filled -> break
  :: atomic { go && connected && !filled && (fill_lock == 0 || fill_lock == sess[m]) ->
       fill_lock = sess[m];
       if
       :: !inuse && !notuse -> notuse = true; no_floor = 0   /* RecyclePool::fill */
       :: else
       fi;
       filled = true; fill_lock = 0 }
  :: atomic { go && connected && !filled && fill_lock == 0 && faults < FAULTS -> faults++; fill_lock = sess[m] }  /* its answer lost */
  :: crash()
  od;

  do
  /* ---- taking our worker ID back after a crash: RecyclePool::take_over ---- */
  :: atomic { go && !own[m] && proof && connected && once(CLAIMED) -> did[m] = did[m] | CLAIMED;
       if
       :: inuse && in_token == token[m] ->          /* ours already: its answer was lost */
          install(in_floor, in_ts, unsure_sent); unsure = false; unsure_sent = 0
       :: inuse && in_token == sf_token[m] && alive == 0 ->
          c = moves; v = in_ver; pending[m] = true;
          f = max(sf_reserved[m], max(in_floor, in_hwm))
       :: inuse && in_token == sf_token[m] && alive != 0   /* held: wait for its session to end */
       :: else -> proof = false                     /* not our last run's: claim instead */
       fi }
    if
    :: !pending[m]
    :: atomic { pending[m] && !stall[m] ->
         /* one multi: set inuse (move counter), set inuse/0 (version), create alive/0 */
         pending[m] = false;
         if
         :: connected && moves == c && inuse && in_ver == v && in_token == sf_token[m] && alive == 0 ->
            moves++; in_token = token[m]; in_floor = f; in_ts = wall(m); in_mtime = now; in_ver++; in_released = false;
            alive = sess[m]; answer(got);
            printf("MSC: t=%d machine %d (token %d) takes the worker ID back from token %d, floor %d, ts %d; answer arrives: %d\n",
                   now, m, token[m], sf_token[m], f, wall(m), got);
            if
            :: got -> install(f, wall(m), now)
            :: else -> unsure = true; unsure_sent = now   /* read back by the next try */
            fi
         :: else                                     /* moved meanwhile, held, or cut off: again */
         fi;
         clear() }
    fi

  /* ---- claiming a free worker ID: RecyclePool::claim ---- */
  :: atomic { go && !own[m] && !proof && connected && once(CLAIMED) -> did[m] = did[m] | CLAIMED;
       if
       :: unsure && inuse && in_token == token[m] ->   /* read_claim: a lost answer was applied */
          install(in_floor, in_ts, unsure_sent)       /* UnansweredClaims: the lease from the send */
       :: else ->
          if
          :: notuse -> c = moves; f = no_floor; pending[m] = true   /* plan_claim: the count, then the floor */
          :: else                                              /* pool_exhausted */
          fi
       fi;
       unsure = false; unsure_sent = 0 }
    if
    :: !pending[m]
    :: atomic { pending[m] && !stall[m] ->
         /* commit_claim: one multi */
         pending[m] = false;
         if
         :: connected && notuse && !inuse && alive == 0 &&
#ifndef CLAIM_WITHOUT_MOVES
            moves == c &&
#endif
            true ->
            /* a check, not a bump: the node it removes and the one it creates
               were each last deleted by a release or a reclaim, which bump */
            notuse = false; no_floor = 0; inuse = true; incs++; in_inc = incs; in_token = token[m];
            in_floor = max(f, last[m]); in_ts = wall(m); in_hwm = 0; in_mtime = now; in_ver = 0;
            alive = sess[m]; answer(got);
            printf("MSC: t=%d machine %d (token %d) claims the worker ID, floor %d, ts %d; answer arrives: %d\n",
                   now, m, token[m], in_floor, wall(m), got);
            if
            :: got -> install(in_floor, wall(m), now)
            :: else -> unsure = true; unsure_sent = now
            fi
         :: else                                     /* raced, held or cut off: claim again */
         fi;
         clear() }
    fi

  /* ---- issuing ---- */
  :: issue(m)

  /* ---- the migration floor: the root's watch ---- */
  :: read_floor()

  /* ---- the heartbeat: RecyclePool::heartbeat, Coordinator::renew ---- */
  :: atomic { go && own[m] && connected && !(did[m] & BEAT) -> did[m] = did[m] | BEAT;
       if
       :: inuse && in_token == token[m] && in_inc == inc[m] -> c = moves; v = in_ver; pending[m] = true  /* read_owned; adopts a lost write */
       :: else -> lose();                  /* lost: Coordinator::lose closes the generator */
          printf("MSC: t=%d machine %d (token %d) finds the worker ID not ours: stops issuing\n", now, m, token[m])
       fi }
    if
    :: !pending[m]
    :: atomic { pending[m] && !stall[m] ->
         /* one multi: check inuse (move counter), set inuse/0 (version), keep alive/0 */
         pending[m] = false;
         if
         /* the node's version and the move count, as ZooKeeper checks them
            (the incarnation is not in the guard: only the count tells a
            node claimed again, at version 0 again, from the one read) */
         :: connected &&
#ifndef HEARTBEAT_WITHOUT_MOVES
            moves == c &&
#endif
            inuse && in_ver == v &&
            (alive == sess[m] || alive == 0) ->
            in_ts = wall(m); in_hwm = last[m]; in_mtime = now; in_ver++; alive = sess[m];
            in_released = false;
            answer(got);
            printf("MSC: t=%d machine %d (token %d) heartbeat ts %d hwm %d; answer arrives: %d\n",
                   now, m, token[m], wall(m), last[m], got);
            if
            :: got ->
#ifndef HEARTBEAT_IGNORES_FLOOR
               read_root_floor;                      /* before the lease is used */
#endif
               lease_until[m] = now + LEASE; fence[m] = wall(m) + LEASE
            :: else                                  /* no renewal: the lease runs out */
            fi
         :: connected && alive != sess[m] && alive != 0 ->   /* AliveNodes::recover: held by another */
            lose()
         :: else                                     /* moved or cut off: the next heartbeat reads */
         fi;
         clear() }
    fi

  /* ---- the reaper: only while our session holds the role (snowflake.pml,
   * next_reaper), owner or not: RecycleStrategy::reap -> ReaperRole ->
   * RecyclePool::reclaim_stale ---- */
  :: atomic { go && connected && reaper == sess[m] && inuse && !(own[m] && in_inc == inc[m]) &&
              reclaimable && once(REAPED) -> did[m] = did[m] | REAPED;
       c = moves; v = in_ver; rts = in_ts; rhwm = in_hwm; rfloor = in_floor; rrel = in_released;
       pending[m] = true;
       rsess = sess[m]; rgen = role_gen;
       printf("MSC: t=%d machine %d (session %d, the reaper) reads the stale or released worker ID at version %d (released: %d)\n", now, m, sess[m], v, rrel) }
    do
    /* our session ended and a new one is made meanwhile (Coordinator::connect,
     * on another thread while the pass waits: the reaper's timer fires later) */
    :: new_session()
    :: atomic { pending[m] && !stall[m] ->
         /* one multi: set inuse (move counter), delete inuse/0 (version),
          * create notuse/0 with the last unit its owner could issue in,
          * and alive/0 absent (create + delete); only through the session
          * that read while holding the role (zk.session_id() == role's) */
         pending[m] = false;
         if
         :: connected && moves == c && inuse && alive == 0 &&
#ifndef UNVERSIONED_RECLAIM
            in_ver == v &&
#endif
#ifndef REAP_WITHOUT_ROLE
            sess[m] == rsess &&
#endif
            true ->
            /* (9) a reclaim goes through the session holding the role, on a
             * reading taken in that same holding */
            assert(reaper == sess[m] && rgen == role_gen);
            delete_inuse(); notuse = true; moves++;
            /* InuseData::last_possible_ms: a mark's lease_ms is 0 */
#ifndef RELEASED_FLOOR_WITHOUT_TS
            no_floor = max(rfloor, max(rhwm, rts + (rrel -> 0 : LEASE)));
#else
            no_floor = (rrel -> rfloor : max(rfloor, max(rhwm, rts + LEASE)));
#endif
            printf("MSC: t=%d machine %d (session %d) reclaims the stale worker ID (read at version %d in session %d: last heartbeat ts %d), floor %d\n",
                   now, m, sess[m], v, rsess, rts, no_floor)
         :: else
         fi;
         clear();
         break }
    od

  /* ---- a new session after ours ended: Coordinator::connect ---- */
  :: new_session()

#ifndef LIVENESS
  /* ---- a clean stop: Coordinator::shutdown closes the generator, then
   * RecyclePool::release: the move (one multi: set inuse (move counter),
   * delete inuse/0, create notuse/0 {floor}, delete alive/0) if the count
   * it remembers still holds; else the mark (one multi: check inuse (move
   * counter), set inuse/0 (version) {ts, hwm: its last unit, lease_ms 0,
   * released}, delete alive/0), which the reaper returns at once ---- */
  :: atomic { go && own[m] && connected && faults < FAULTS -> faults++;
       if
       :: inuse && in_inc == inc[m] && in_token == token[m] ->
          if
          :: no_floor = last[m]; delete_inuse(); notuse = true; moves++   /* last >= floor */
          :: in_released = true; in_ts = last[m]; in_hwm = last[m]; in_mtime = now; in_ver++;
             printf("MSC: t=%d machine %d (token %d) marks its node released instead (another move came first)\n",
                    now, m, token[m])
          fi;
          if :: alive == sess[m] -> alive = 0 :: else fi;
          sf_token[m] = 0                            /* TimeReservation::forget_owner */
       :: else
       fi;
       printf("MSC: t=%d machine %d (token %d) stops and gives the worker ID back, floor %d\n",
              now, m, token[m], last[m]);
       lose();
       expire(sess[m]);                              /* zookeeper_close */
       up[m] = false; runs++ }
    goto restart
#endif

#ifdef MARK_BEFORE_CLOSE
  /* mutant: the mark written before the generator closes: it issues on */
  :: atomic { go && own[m] && connected && inuse && in_inc == inc[m] && in_token == token[m] &&
              !in_released && faults < FAULTS -> faults++;
       in_released = true; in_ts = last[m]; in_hwm = last[m]; in_mtime = now; in_ver++;
       if :: alive == sess[m] -> alive = 0 :: else fi;
       printf("MSC: t=%d machine %d (token %d) marks its node released at %d, and issues on\n",
              now, m, token[m], last[m]) }
#endif

  :: crash()
  :: clone()
  od;

restart:
  if
  :: runs < 2 && RESTARTS -> goto start
  :: else
  fi
}
