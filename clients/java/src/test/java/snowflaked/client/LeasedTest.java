package snowflaked.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** LeasedGenerator against a real cluster: the holder's side of the lease contract. */
class LeasedTest extends WithCluster {
  /** A named pool of two worker IDs: a test sees who gets which. */
  static final Layout TWO = new Layout(41, 0, 1, 12, "time,datacenter,worker,sequence", 1, ClientTest.EPOCH_MS);



  static long msOf(long id, Layout l) {
    return l.unitStart(id >>> l.shifts()[0]);
  }

  static long workerOf(long id, Layout l) {
    return id >>> l.shifts()[2] & ((1L << l.workerBits()) - 1);
  }

  static LeasedGenerator lease(Client c, String holder, String pool, Layout layout) throws SnowflakedException {
    return new LeasedGenerator(c, holder, pool, layout, null, null, null);
  }

  @Test
  void idsRisingInTheClustersIdSpace() throws Exception {
    try (Client c = ClientTest.client(cluster.servers, 5000); LeasedGenerator g = new LeasedGenerator(c, "java-test")) {
      assertEquals(10, g.layout().workerBits());
      long prev = 0;
      Set<Long> ours = new HashSet<>();
      for (int i = 0; i < 200_000; i++) {
        long id = g.nextId();
        assertTrue(id > prev);
        prev = id;
        ours.add(id);
      }
      assertEquals(g.workerId(), workerOf(prev, g.layout()));
      for (long id : c.ids("mixed", 1000)) {
        assertTrue(workerOf(id, g.layout()) != g.workerId() && !ours.contains(id));
      }
    }
  }

  @Test
  void renewedThroughAKilledDaemon() throws Exception {
    try (Client c = ClientTest.client(cluster.servers, 1000);
        LeasedGenerator g = new LeasedGenerator(c, "java-renew", null, null, Duration.ofMillis(1500), null, null)) {
      long worker = g.workerId();
      cluster.command("kill 0");
      try {
        // Three leases long, paced: an ID a millisecond (a loop at full speed would take a core
        // from the daemons that renew it, on a loaded host).
        long end = System.nanoTime() + 4_500_000_000L;
        while (System.nanoTime() < end) {
          g.nextId();
          Thread.sleep(1);
        }
        assertEquals(worker, g.workerId()); // renewed, never replaced
      } finally {
        cluster.command("start 0");
        cluster.command("ready");
      }
    }
  }

  @Test
  @SuppressWarnings("try") // other holds the pool's other worker ID
  void givenBackOnCloseTheNextHolderStartsRightAbove() throws Exception {
    try (Client c = ClientTest.client(cluster.servers, 5000); LeasedGenerator other = lease(c, "java-other", "two", TWO)) {
      long last = 0;
      long worker;
      try (LeasedGenerator first = lease(c, "java-first", "two", TWO)) {
        for (int i = 0; i < 5000; i++) last = first.nextId();
        worker = first.workerId();
      }
      // The only free worker ID: the one given back with its last stamp; the next holder starts
      // right above it (a named pool's first timestamp is a whole second), not a lease ahead.
      // (The lease's own first timestamp is looked at: the first ID's is the clock's reading when
      // later, as on a loaded host, where taking the lease may outlast that second.)
      long lastMs = msOf(last, TWO);
      try (LeasedGenerator next = new LeasedGenerator(c, "java-next", "two", TWO, null, Duration.ofSeconds(3), null)) {
        assertEquals(worker, next.workerId());
        long firstMs = TWO.unitStart(next.firstUnit());
        assertEquals((lastMs / 1000 + 1) * 1000, firstMs, "the first timestamp after a last one at " + lastMs);
        assertTrue(msOf(next.nextId(), TWO) >= firstMs);
      }
    }
  }

  @Test
  @SuppressWarnings("try") // keeper holds the pool's other worker ID
  void frozenPastItsLeaseItNeverReusesTheWorkerId() throws Exception {
    try (Client c = ClientTest.client(cluster.servers, 5000); LeasedGenerator keeper = lease(c, "java-keeper", "two", TWO)) {
      ProcessBuilder pb = new ProcessBuilder(ProcessHandle.current().info().command().orElse("java"), "-cp",
          System.getenv("SNOWFLAKED_TEST_CLASSPATH"), "snowflaked.client.FrozenHolder",
          String.join(",", cluster.servers));
      pb.redirectError(ProcessBuilder.Redirect.INHERIT);
      Process holder = pb.start();
      try {
        BufferedReader lines = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8));
        String[] first = lines.readLine().split(" ");
        assertEquals("worker", first[0]);
        long worker = Long.parseLong(first[1]);
        lines.readLine();
        new ProcessBuilder("kill", "-STOP", String.valueOf(holder.pid())).start().waitFor();
        LeasedGenerator[] after = new LeasedGenerator[1];
        Cluster.eventually(20_000, "the frozen holder's worker ID reclaimed", () -> {
          try {
            after[0] = lease(c, "java-after", "two", TWO);
            return true;
          } catch (SnowflakedException e) {
            return false;
          }
        });
        try (LeasedGenerator a = after[0]) {
          assertEquals(worker, a.workerId());
          Set<Long> theirs = new HashSet<>();
          long theirFirstMs = 0;
          for (int i = 0; i < 3000; i++) {
            long id = a.nextId();
            if (i == 0) theirFirstMs = msOf(id, TWO);
            theirs.add(id);
          }
          new ProcessBuilder("kill", "-CONT", String.valueOf(holder.pid())).start().waitFor();
          boolean refused = false;
          int afterRefusal = 0;
          // Thawed, it refuses, then goes on under a new lease (IDs printed before the SIGSTOP
          // took may come first): 3000 of its lines after the first refusal are looked at.
          for (String line; afterRefusal < 3000 && (line = lines.readLine()) != null; ) {
            refused |= line.startsWith("refused");
            if (refused) afterRefusal++;
            if (line.startsWith("id ")) {
              long id = Long.parseLong(line.substring(3));
              assertTrue(!theirs.contains(id));
              assertTrue(workerOf(id, TWO) != worker || msOf(id, TWO) < theirFirstMs,
                  "the thawed holder made " + id + " on the worker ID another holds");
            }
          }
          assertTrue(refused, "thawed past its lease, it never refused");
          holder.getOutputStream().close();
          holder.waitFor();
        }
      } finally {
        holder.destroyForcibly();
      }
    }
  }

  @Test
  void aClockSteppedBackIsWaitedOutOrRefused() throws Exception {
    AtomicLong offset = new AtomicLong();
    try (Client c = ClientTest.client(cluster.servers, 5000);
        LeasedGenerator g = new LeasedGenerator(c, "java-stepped", null, null, null, null,
            () -> System.currentTimeMillis() + offset.get())) {
      List<Long> made = new ArrayList<>();
      for (int i = 0; i < 200; i++) made.add(g.nextId());
      offset.set(-300); // back 300 ms: waited out
      for (int i = 0; i < 200; i++) made.add(g.nextId());
      offset.set(-3300); // back 3 s more: refused, not waited
      assertThrows(LeaseExpiredException.class, g::nextId);
      Cluster.eventually(10_000, "IDs again once the clock is past the last stamp", () -> {
        try {
          made.add(g.nextId());
          return true;
        } catch (SnowflakedException e) {
          return false;
        }
      });
      for (int i = 1; i < made.size(); i++) assertTrue(made.get(i) > made.get(i - 1));
    }
  }

  @Test
  void aNamedPoolsOwnLayoutInSonyflakesShape() throws Exception {
    Layout sony = new Layout(39, 0, 4, 8, "time,sequence,worker", 10, 1409529600000L);
    try (Client c = ClientTest.client(cluster.servers, 5000); LeasedGenerator g = lease(c, "java-sony", "sony4", sony)) {
      long prev = 0;
      for (int i = 0; i < 1000; i++) {
        long id = g.nextId();
        assertTrue(id > prev && (id & 0xF) == g.workerId());
        prev = id;
      }
      assertTrue(Math.abs((prev >>> 12) * 10 + 1409529600000L - System.currentTimeMillis()) < 5000);
      assertThrows(IllegalArgumentException.class, () -> new LeasedGenerator(c, "x", "sony4", null, null, null, null));
    }
  }
}
