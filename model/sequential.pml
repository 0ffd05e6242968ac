/* The sequential strategy (coordinator.type "sequential"): one identity,
 * <root>/forever/<host>:<port>-<seq>, that both machines were given by
 * mistake (one coordinator.advertise twice, or a cloned machine). Its lock is
 * the ephemeral <root>/alive/<id>. Included by snowflake.pml (-DSEQUENTIAL).
 *
 * The node exists (an earlier first boot made it; different names get
 * different numbers, which is ZooKeeper's sequential counter, not ours to
 * prove). Its writer was a run nobody knows: token 0, ts 0, a lease.
 *
 * Mutants: -DFLOOR_WITHOUT_LEASE  SequentialData::last_possible_ms leaves out
 * ts + lease (the node's hwm alone as the floor).
 *   -DFLOOR_IGNORES_SUPERSEDED  `pool floor` does not wait for the lease of an
 * owner that a later one superseded (SequentialData::superseded_until). */

byte in_sup;                /* the node's superseded_until: an earlier owner's lease end, 0 none */

#define CLAIMED 1   /* did[m] bits: an acquire this tick */
#define BEAT 2      /* a heartbeat */

#define go (!stall[m])
/* `pool floor`'s check of the identity: the session holding its alive node
 * confirmed the floor, or none holds it and the lease of the node's last
 * write has run out (a released node has none); and the lease of an owner
 * the node's writer superseded has run out too */
#ifdef FLOOR_IGNORES_SUPERSEDED
#define superseded_over true
#else
#define superseded_over (now >= in_sup)
#endif
#define owner_confirmed (((alive != 0 && acked[alive] >= root_floor) || \
                          (alive == 0 && now >= in_mtime + (in_lease -> LEASE : 0))) && superseded_over)
#define due(m) (up[m] && !stall[m] && (may_issue(m) || pending[m] || (!sess_live[sess[m]] && !cut[m]) || \
                 (conn(m) && ((own[m] && !(did[m] & BEAT)) || (!own[m] && !(did[m] & CLAIMED))))))

inline clear() { v = 0; f = 0; sp = 0; got = false }

proctype Daemon(byte m) {
  byte runs;                 /* runs ended: a crash or a stop, then one restart */
  bool unsure, proof, got;
  byte unsure_sent, v, f, sp;
  byte ver;                  /* SequentialClaim::version: the node's version we wrote */

start:
  start_run();
  ver = 0;

  do
  /* ---- SequentialWorker::acquire: take_alive, then read the node ---- */
  :: atomic { go && !own[m] && connected && !(did[m] & CLAIMED) -> did[m] = did[m] | CLAIMED;
       if
       :: alive == 0 || alive == sess[m] ->
          alive = sess[m];                           /* take_alive (a lost answer: ours on the next try) */
          v = in_ver; sp = in_sup;
          if
          :: in_token == token[m] -> f = max(in_floor, in_hwm)   /* our own write, its answer lost */
          :: in_token != token[m] && proof && in_token == sf_token[m] ->
             f = max(sf_reserved[m], max(in_floor, in_hwm))     /* our dead previous run's */
          :: else ->                                            /* SequentialData::last_possible_ms */
#ifndef FLOOR_WITHOUT_LEASE
             f = max(in_floor, max(in_hwm, in_ts + (in_lease -> LEASE : 0)));
#else
             f = max(in_floor, in_hwm);
#endif
             sp = max(sp, (in_lease -> in_mtime + LEASE : 0))   /* its writer's lease may run */
          fi;
          pending[m] = true
       :: else                                       /* held: "two daemons with one advertise?" */
       fi }
    if
    :: !pending[m]
    :: atomic { pending[m] && go ->
         /* the versioned set of the node: {owner, floor, ts, hwm = floor, lease} */
         pending[m] = false;
         if
         :: connected && in_ver == v && alive == sess[m] ->
            in_token = token[m]; in_floor = f; in_ts = wall(m); in_hwm = f; in_lease = true; in_sup = sp;
            in_mtime = now; in_ver++; ver = in_ver; answer(got);
            printf("MSC: t=%d machine %d (token %d) takes the identity, floor %d, ts %d; answer arrives: %d\n",
                   now, m, token[m], f, wall(m), got);
            if
            :: got -> install(f, wall(m), now)
            :: else                                  /* the next acquire reads our token */
            fi
         :: else                                     /* written meanwhile, or cut off: again */
         fi;
         clear() }
    fi

  /* ---- issuing ---- */
  :: issue(m)

  /* ---- the migration floor: the root's watch ---- */
  :: read_floor()

  /* ---- SequentialWorker::heartbeat: set (version) + keep alive, one multi ---- */
  :: atomic { go && own[m] && connected && !(did[m] & BEAT) -> did[m] = did[m] | BEAT;
       if
       :: in_ver == ver && (alive == sess[m] || alive == 0) ->
          in_ts = wall(m); in_hwm = last[m]; in_mtime = now; in_ver++; ver = in_ver; alive = sess[m];
          answer(got);
          printf("MSC: t=%d machine %d (token %d) heartbeat ts %d hwm %d; answer arrives: %d\n",
                 now, m, token[m], wall(m), last[m], got);
          if
          :: got ->
#ifndef HEARTBEAT_IGNORES_FLOOR
             read_root_floor;                        /* before the lease is used */
#endif
             lease_until[m] = now + LEASE; fence[m] = wall(m) + LEASE
          :: else
          fi
       :: in_ver != ver && in_token == token[m] -> ver = in_ver  /* our write, its answer lost: adopt */
       :: else ->                                    /* another's write, or its alive node: lost */
          lose();
          printf("MSC: t=%d machine %d (token %d) finds the identity not ours: stops issuing\n", now, m, token[m])
       fi;
       clear() }

  /* ---- a new session after ours ended: Coordinator::connect ---- */
  :: atomic { go && !sess_live[sess[m]] && !cut[m] -> assert(sessions < NSESS);
       sess[m] = sessions; sess_live[sessions] = true; sessions++ }

  /* ---- a clean stop: the generator closes, then SequentialWorker::release
   * (one multi: set the node {ts = hwm = floor, lease 0} at our version,
   * delete alive/0) ---- */
  :: atomic { go && own[m] && connected && faults < FAULTS -> faults++;
       if
       :: in_ver == ver ->
          in_ts = last[m]; in_hwm = last[m]; in_lease = false; in_mtime = now; in_ver++;   /* last >= floor */
          if :: alive == sess[m] -> alive = 0 :: else fi;
          sf_token[m] = 0                            /* TimeReservation::forget_owner */
       :: else
       fi;
       printf("MSC: t=%d machine %d (token %d) stops and releases the identity at %d\n", now, m, token[m], last[m]);
       lose();
       expire(sess[m]);                              /* zookeeper_close */
       up[m] = false; runs++ }
    goto restart

  :: crash()
  :: clone()
  od;

restart:
  if
  :: runs < 2 -> goto start
  :: else
  fi
}
