package snowflaked.client;

import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * What IdBuffer and SeqBuffer share: batches fetched ahead by a thread, handed out oldest first,
 * none older than maxAge (counted from when its batch was asked for). A buffer nobody takes from
 * fetches nothing: a refill follows takes, not the clock.
 */
abstract class Buffer<T> implements AutoCloseable {
  /** A batch fetcher. */
  interface Fetch<T> {
    List<T> get(int count) throws SnowflakedException;
  }

  private record Batch<T>(long askedAt, List<T> values) {}

  private final Client client;
  private final Fetch<T> fetch;
  private final int batch;
  private final int lowWater;
  private final long maxAgeNanos;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition filled = lock.newCondition(); // takers wait: a batch came
  private final Condition wanted = lock.newCondition(); // the refill thread waits: a take
  private final ArrayDeque<Batch<T>> batches = new ArrayDeque<>();
  private int next; // into the first batch's values
  private int count;
  private boolean takenSinceFetch = true;
  private boolean closed;
  private SnowflakedException error;
  private final Thread thread;

  Buffer(Client client, Fetch<T> fetch, int batch, int lowWater, long maxAgeNanos, String name) {
    if (batch < 1 || lowWater < 0 || maxAgeNanos <= 0) {
      throw new IllegalArgumentException("batch: 1 or more; lowWater: 0 or more; maxAge: more than 0");
    }
    this.client = client;
    this.fetch = fetch;
    this.batch = batch;
    this.lowWater = lowWater;
    this.maxAgeNanos = maxAgeNanos;
    this.thread = new Thread(this::refill, name);
    thread.setDaemon(true);
    thread.start();
  }

  /**
   * The next buffered value; with none left it waits for a batch (up to the client's timeout),
   * then throws the last fetch's error (a RequestException at once).
   */
  public T next() throws SnowflakedException {
    long deadline = System.nanoTime() + client.timeout().toNanos();
    lock.lock();
    try {
      while (true) {
        if (closed) throw new ClosedException("the buffer is closed");
        long now = System.nanoTime();
        dropStale(now);
        takenSinceFetch = true;
        if (count > 0) {
          Batch<T> first = batches.peekFirst();
          T value = first.values().get(next++);
          count--;
          if (next == first.values().size()) {
            batches.pollFirst();
            next = 0;
          }
          if (count <= lowWater) wanted.signal();
          return value;
        }
        wanted.signal();
        if (error instanceof RequestException || error instanceof ClosedException) throw error;
        if (now >= deadline) {
          if (error != null) throw error;
          throw new UnavailableException("no batch came in time", java.util.Map.of());
        }
        filled.awaitNanos(deadline - now);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ClosedException("interrupted");
    } finally {
      lock.unlock();
    }
  }

  /** How many values are buffered now. */
  public int size() {
    lock.lock();
    try {
      dropStale(System.nanoTime());
      return count;
    } finally {
      lock.unlock();
    }
  }

  private void dropStale(long now) {
    while (!batches.isEmpty() && now - batches.peekFirst().askedAt() > maxAgeNanos) {
      count -= batches.pollFirst().values().size() - next;
      next = 0;
    }
  }

  private void refill() {
    long backoff = 50;
    while (true) {
      lock.lock();
      try {
        while (!closed && (count > lowWater || !takenSinceFetch)) {
          Batch<T> oldest = batches.peekFirst();
          if (oldest == null) {
            wanted.await();
          } else {
            wanted.awaitNanos(Math.max(10_000_000, oldest.askedAt() + maxAgeNanos - System.nanoTime()));
          }
          dropStale(System.nanoTime());
        }
        if (closed) return;
        takenSinceFetch = false;
      } catch (InterruptedException e) {
        return;
      } finally {
        lock.unlock();
      }
      long askedAt = System.nanoTime();
      List<T> values;
      try {
        values = fetch.get(batch);
      } catch (SnowflakedException | RuntimeException e) {
        lock.lock();
        try {
          error = e instanceof SnowflakedException s ? s
              : new UnavailableException("a fetch failed: " + e, java.util.Map.of());
          filled.signalAll(); // a waiting taker asks again (takenSinceFetch): an idle buffer does not
          if (e instanceof ClosedException) return; // the client was closed
          // The whole pause, whatever takers ask meanwhile: a refusing cluster is not hammered.
          long end = System.nanoTime() + backoff * 1_000_000;
          while (!closed && System.nanoTime() < end) wanted.awaitNanos(end - System.nanoTime());
        } catch (InterruptedException ie) {
          return;
        } finally {
          lock.unlock();
        }
        backoff = Math.min(1000, backoff * 2);
        continue;
      }
      backoff = 50;
      lock.lock();
      try {
        error = null;
        if (!values.isEmpty()) {
          batches.addLast(new Batch<>(askedAt, values));
          count += values.size();
        }
        filled.signalAll();
      } finally {
        lock.unlock();
      }
    }
  }

  /** Stops the refill; what is buffered is dropped (a gap at most, never a duplicate). */
  @Override
  public void close() {
    lock.lock();
    try {
      closed = true;
      filled.signalAll();
      wanted.signal();
    } finally {
      lock.unlock();
    }
    try {
      thread.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
