package snowflaked.client;

import java.util.List;

/**
 * tests/bench/clients.py's Java part: one thread's IDs a second from the plain call, the buffer
 * and the leased generator, each for the seconds given, against the servers given.
 */
public final class Bench {
  interface Next {
    long get() throws SnowflakedException;
  }

  static double rate(Next next, double seconds) throws SnowflakedException {
    long count = 0;
    long end = System.nanoTime() + (long) (seconds * 1e9);
    do {
      for (int i = 0; i < 100; i++) next.get();
      count += 100;
    } while (System.nanoTime() < end);
    return count / seconds;
  }

  public static void main(String[] args) throws Exception {
    double seconds = Double.parseDouble(args[1]);
    try (Client c = new Client(List.of(args[0].split(",")), null, null)) {
      rate(() -> c.id("bench"), Math.min(1, seconds)); // the JIT warmed
      double remote = rate(() -> c.id("bench"), seconds);
      double buffered;
      try (IdBuffer b = new IdBuffer(c, "bench")) {
        rate(b::nextId, Math.min(1, seconds)); // the JIT warmed
        buffered = rate(b::nextId, seconds);
      }
      double leased;
      try (LeasedGenerator g = new LeasedGenerator(c, "bench")) {
        rate(g::nextId, Math.min(1, seconds));
        leased = rate(g::nextId, seconds);
      }
      System.out.printf("%.0f %.0f %.0f%n", remote, buffered, leased);
    }
  }
}
