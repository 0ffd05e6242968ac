package snowflaked.client;

import java.time.Duration;
import java.util.List;

/** A holder in another process for LeasedTest: its worker ID, then IDs or refusals, one a line. */
public final class FrozenHolder {
  public static void main(String[] args) throws Exception {
    Client c = new Client(List.of(args[0].split(",")), null, Duration.ofSeconds(5));
    LeasedGenerator g = new LeasedGenerator(c, "java-frozen", "two", LeasedTest.TWO, Duration.ofSeconds(1), null, null);
    System.out.println("worker " + g.workerId());
    System.out.flush();
    // Until the test closes its stdin (not a timer: the clock runs on while it is frozen).
    Thread watch = new Thread(() -> {
      try {
        while (System.in.read() >= 0) {
          // nothing: the test writes nothing
        }
      } catch (java.io.IOException e) {
        // closed: the same
      }
      System.exit(0);
    });
    watch.setDaemon(true);
    watch.start();
    while (true) {
      try {
        System.out.println("id " + g.nextId());
      } catch (SnowflakedException e) {
        System.out.println("refused " + e.getClass().getSimpleName());
      }
      System.out.flush();
      Thread.sleep(1);
    }
  }
}
