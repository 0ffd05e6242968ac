package snowflaked.client;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * IDs made in this process, at the layout's limit, over a worker ID leased from the cluster,
 * keeping the holder's contract of docs/api.md#worker-id-leases-for-your-own-generators: its
 * deadline counted on the boot clock (/proc/uptime: it counts a suspend) from before each take
 * or renewal was sent, and checked as each time unit is first stamped (a unit stamped before the
 * deadline is within the fence, which the next holder starts past); renewals on a background
 * thread through any replica (a failed one leaves the deadline where it was, a late answer
 * revives nothing); a lost or expired lease replaced by a new one (a new worker ID), the expired
 * one given back with its last stamp; stamps within the grant, never below its own last stamp (a
 * clock stepped back is waited out up to maxBackwardWait); close() gives the lease back with the
 * last stamp (0 for none). Thread-safe. A generator never closed keeps its lease while the
 * process lives.
 */
public final class LeasedGenerator implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger("snowflaked.client");

  private static final class Grant {
    long workerId;
    long datacenterId;
    String token;
    long deadline; // BootClock nanos
    long renewAt;
    long fenceMs;
    long firstUnit;
    boolean lost;
  }

  private final Client client;
  private final String holder;
  private final String pool;
  private final Long durationMs;
  private final long maxBackwardWaitMs;
  private final LongSupplier wallMs;
  private final Layout layout;
  private final int[] shifts;
  private final long maxSequence;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private Grant grant;
  private long lastUnit = -1;
  private long sequence;
  private boolean closed;
  private final Thread thread;

  /**
   * @param holder a name for the lease (who holds it: snowflaked lease list)
   * @param pool a named pool, then {@code layout} is its layout; null: the cluster's pool and
   *     layout (the IDs share one space with the daemons')
   * @param duration the lease asked for; null: the longest the cluster grants
   * @param maxBackwardWait how far back a stepped clock is waited out
   * @param wallMs the wall clock in ms (null: System::currentTimeMillis)
   */
  public LeasedGenerator(Client client, String holder, String pool, Layout layout, Duration duration,
      Duration maxBackwardWait, LongSupplier wallMs) throws SnowflakedException {
    if ((pool == null) != (layout == null)) {
      throw new IllegalArgumentException("a named pool's generator needs its layout, and only it takes one");
    }
    this.client = client;
    this.holder = holder;
    this.pool = pool;
    this.durationMs = duration == null ? null : duration.toMillis();
    this.maxBackwardWaitMs = maxBackwardWait == null ? 1000 : maxBackwardWait.toMillis();
    this.wallMs = wallMs == null ? System::currentTimeMillis : wallMs;
    Object[] taken = take(layout);
    this.grant = (Grant) taken[0];
    this.layout = (Layout) taken[1];
    this.shifts = this.layout.shifts();
    this.maxSequence = (1L << this.layout.sequenceBits()) - 1;
    this.thread = new Thread(this::keep, "snowflaked-lease-" + holder);
    thread.setDaemon(true);
    thread.start();
  }

  /** A lease of the cluster's pool, the longest it grants. */
  public LeasedGenerator(Client client, String holder) throws SnowflakedException {
    this(client, holder, null, null, null, null, null);
  }

  public Layout layout() {
    return layout;
  }

  public long workerId() {
    lock.lock();
    try {
      return grant.workerId;
    } finally {
      lock.unlock();
    }
  }

  private String poolQuery() {
    return pool == null ? "" : "&pool=" + Client.encode(pool);
  }

  /** A new lease: {grant, layout}. The generator's layout is only read here. */
  @SuppressWarnings("unchecked")
  private Object[] take(Layout known) throws SnowflakedException {
    String query = "holder=" + Client.encode(holder) + poolQuery();
    if (pool != null) query += "&worker_bits=" + known.workerBits();
    if (durationMs != null) query += "&duration_ms=" + durationMs;
    long sentAt = BootClock.nanos();
    String answer = client.request("POST", "/v1/leases?" + query);
    Map<String, Object> a = Map.of();
    Grant g = new Grant();
    Layout layout = known;
    try {
      a = Json.object(answer);
      g.workerId = (Long) a.get("worker_id");
      g.datacenterId = (Long) a.getOrDefault("datacenter_id", 0L);
      g.token = (String) a.get("token");
      long leaseMs = (Long) a.get("lease_ms");
      long renewAfterMs = (Long) a.get("renew_after_ms");
      long firstMs = (Long) a.get("first_timestamp_ms");
      g.fenceMs = (Long) a.get("max_timestamp_ms");
      if (leaseMs <= 0 || renewAfterMs <= 0 || renewAfterMs > leaseMs || firstMs <= 0 || g.fenceMs <= 0) {
        throw new IllegalArgumentException("a lease answer without its terms");
      }
      if (pool != null) {
        if (((Long) a.get("worker_bits")).intValue() != known.workerBits()) {
          throw new IllegalArgumentException("pool " + pool + " has " + a.get("worker_bits") + " worker bits");
        }
      } else {
        layout = Layout.fromLease((Map<String, Object>) a.get("layout"));
        if (known != null && !layout.equals(known)) {
          throw new IllegalArgumentException("the cluster's layout changed under the generator");
        }
      }
      if (g.token == null || g.workerId >> layout.workerBits() != 0 || g.datacenterId >> layout.datacenterBits() != 0) {
        throw new IllegalArgumentException("worker ID or datacenter ID does not fit the layout");
      }
      // /proc/uptime's reading may lag: the deadline is counted that much sooner.
      g.deadline = sentAt + leaseMs * 1_000_000 - BootClock.RESOLUTION_NANOS;
      g.renewAt = sentAt + renewAfterMs * 1_000_000;
      g.firstUnit = Math.floorDiv(firstMs - layout.epochMs() + layout.timeUnitMs() - 1, layout.timeUnitMs());
    } catch (ClassCastException | NullPointerException | IllegalArgumentException e) {
      if (a.get("worker_id") instanceof Long w && a.get("token") instanceof String t) giveBackQuietly(w, t, 0);
      throw new SnowflakedException("a lease answer not to be used: " + e.getMessage(), e);
    }
    return new Object[] {g, layout};
  }

  /**
   * The next ID. LeaseExpiredException or LeaseLostException when no ID may be made now (a new
   * lease is being taken), ClosedException once closed.
   */
  public long nextId() throws SnowflakedException {
    lock.lock();
    try {
      while (true) {
        if (closed) throw new ClosedException("the generator is closed");
        Grant g = grant;
        if (g.lost) throw new LeaseLostException("the lease of worker ID " + g.workerId + " is lost; a new one is being taken");
        long nowMs = wallMs.getAsLong();
        long unit = layout.unitOf(nowMs);
        if (unit < 0) throw new LeaseExpiredException("the clock reads earlier than the layout's epoch");
        if (unit != lastUnit && BootClock.nanos() >= g.deadline) {
          throw new LeaseExpiredException("the lease of worker ID " + g.workerId + " ran out unrenewed; a new one is being taken");
        }
        long floor = Math.max(lastUnit, g.firstUnit);
        if (unit < floor) {
          long waitMs = layout.unitStart(floor) - nowMs;
          if (waitMs > maxBackwardWaitMs) {
            throw new LeaseExpiredException("the clock is " + waitMs + " ms behind the last or first timestamp worker ID " + g.workerId + " may use");
          }
          pause(waitMs * 1_000_000);
          continue;
        }
        if (layout.unitStart(unit) > g.fenceMs) throw new LeaseExpiredException("the clock is past the lease's time fence");
        if (unit >= 1L << layout.timeBits()) throw new LeaseExpiredException("the layout's time bits have run out");
        if (unit == lastUnit) {
          if (sequence == maxSequence) { // this unit is used up: the next one
            pause((layout.unitStart(unit + 1) - nowMs) * 1_000_000);
            continue;
          }
          sequence++;
        } else {
          lastUnit = unit;
          sequence = 0;
        }
        return unit << shifts[0] | g.datacenterId << shifts[1] | g.workerId << shifts[2] | sequence << shifts[3];
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Waits, called with the lock held: released while waiting (the renewal thread and other
   * callers go on), the last 1.5 ms spun (a timed wait oversleeps a millisecond unit).
   */
  private void pause(long nanos) throws ClosedException {
    long end = System.nanoTime() + nanos;
    try {
      if (nanos > 1_500_000) changed.awaitNanos(nanos - 1_500_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ClosedException("interrupted");
    }
    // Spun without the lock: the renewal thread and other callers go on (the caller's loop
    // re-reads everything after).
    lock.unlock();
    try {
      while (System.nanoTime() < end) Thread.onSpinWait();
    } finally {
      lock.lock();
    }
  }

  /** The first time unit the current lease may stamp (the tests read the daemon's answer). */
  long firstUnit() {
    lock.lock();
    try {
      return grant.firstUnit;
    } finally {
      lock.unlock();
    }
  }

  private long lastStampMs() {
    return lastUnit < 0 ? 0 : layout.unitStart(lastUnit + 1) - 1;
  }

  private String target(long workerId, String token, long lastMs) {
    return "/v1/leases/" + workerId + "?token=" + Client.encode(token) + poolQuery() + "&last_timestamp_ms=" + lastMs;
  }

  private void keep() {
    while (true) {
      try {
        if (!keepOnce()) return;
      } catch (RuntimeException e) { // the thread must not die: said, then on
        LOG.log(Level.WARNING, "snowflaked.client: renewing the lease failed", e);
        sleepQuietly(1000);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  private boolean keepOnce() throws InterruptedException {
    Grant g;
    String target;
    boolean over;
    long lastMs;
    lock.lock();
    try {
      g = grant;
      if (!g.lost) {
        long wait = g.renewAt - BootClock.nanos();
        if (wait > 0 && !closed) changed.awaitNanos(wait);
      }
      if (closed) return false;
      g = grant;
      over = g.lost || BootClock.nanos() >= g.deadline;
      lastMs = g.lost ? -1 : lastStampMs();
      target = target(g.workerId, g.token, Math.max(0, lastMs));
    } finally {
      lock.unlock();
    }
    if (over) {
      if (lastMs >= 0 && giveBackQuietly(g.workerId, g.token, lastMs)) {
        lock.lock();
        try {
          g.lost = true; // given back: nothing more is made or given on it
        } finally {
          lock.unlock();
        }
      }
      replace();
      return true;
    }
    long sentAt = BootClock.nanos();
    try {
      long timeout = Math.min(client.timeout().toNanos(), Math.max(10_000_000, g.deadline - sentAt));
      Map<String, Object> a = Json.object(client.request("PUT", target, Duration.ofNanos(timeout)));
      lock.lock();
      try {
        if (BootClock.nanos() < g.deadline) { // a late answer revives nothing
          g.deadline = sentAt + (Long) a.get("lease_ms") * 1_000_000 - BootClock.RESOLUTION_NANOS;
          g.renewAt = sentAt + (Long) a.get("renew_after_ms") * 1_000_000;
          g.fenceMs = Math.max(g.fenceMs, (Long) a.get("max_timestamp_ms"));
        }
      } finally {
        lock.unlock();
      }
    } catch (RequestException e) {
      lock.lock();
      try {
        if ("lease_lost".equals(e.code())) {
          g.lost = true;
          LOG.warning("snowflaked.client: the lease of worker ID " + g.workerId + " is lost");
        } else {
          g.renewAt = BootClock.nanos() + retryNanos(g);
        }
      } finally {
        lock.unlock();
      }
    } catch (ClosedException e) {
      return false;
    } catch (SnowflakedException e) { // the deadline stays where it was; sooner than planned, again
      lock.lock();
      try {
        g.renewAt = BootClock.nanos() + retryNanos(g);
      } finally {
        lock.unlock();
      }
    }
    return true;
  }

  private static long retryNanos(Grant g) {
    return Math.min(1_000_000_000L, Math.max(50_000_000L, (g.deadline - BootClock.nanos()) / 10));
  }

  private void replace() throws InterruptedException {
    Grant fresh;
    try {
      fresh = (Grant) take(layout)[0];
    } catch (ClosedException e) {
      lock.lock();
      try {
        while (!closed) changed.await();
      } finally {
        lock.unlock();
      }
      return;
    } catch (SnowflakedException e) {
      LOG.warning("snowflaked.client: no new lease yet: " + e.getMessage());
      lock.lock();
      try {
        if (!closed) changed.awaitNanos(500_000_000L);
      } finally {
        lock.unlock();
      }
      return;
    }
    lock.lock();
    try {
      if (!closed) {
        grant = fresh;
        lastUnit = -1;
        sequence = 0;
        return;
      }
    } finally {
      lock.unlock();
    }
    giveBackQuietly(fresh.workerId, fresh.token, 0);
  }

  private void giveBack(long workerId, String token, long lastMs) throws SnowflakedException {
    try {
      client.request("DELETE", target(workerId, token, lastMs));
    } catch (RequestException e) {
      if (!"lease_lost".equals(e.code())) throw e; // lost: nothing to give back
    }
  }

  private boolean giveBackQuietly(long workerId, String token, long lastMs) {
    try {
      giveBack(workerId, token, lastMs);
      return true;
    } catch (SnowflakedException e) {
      LOG.warning("snowflaked.client: worker ID " + workerId + " not given back: " + e.getMessage());
      return false;
    }
  }

  private static void sleepQuietly(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Stops making IDs, then gives the lease back with the last stamp used (the next holder starts
   * above it). Throws the give-back's error if no replica took it: the lease runs out by itself.
   */
  @Override
  public void close() throws SnowflakedException {
    lock.lock();
    try {
      if (closed) return;
      closed = true;
      changed.signalAll();
    } finally {
      lock.unlock();
    }
    try {
      thread.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    Grant g;
    long lastMs;
    lock.lock();
    try {
      g = grant;
      lastMs = lastStampMs();
    } finally {
      lock.unlock();
    }
    if (!g.lost) giveBack(g.workerId, g.token, lastMs);
  }
}
