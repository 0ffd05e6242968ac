package snowflaked.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;

/** Client: IDs and sequence numbers from a real cluster; failover, refusals, TLS. */
class ClientTest extends WithCluster {
  static final long EPOCH_MS = 1735689600000L;


  static Client client(List<String> servers, long timeoutMs) throws SnowflakedException {
    return new Client(servers, null, Duration.ofMillis(timeoutMs));
  }

  @Test
  void idsInEveryForm() throws Exception {
    try (Client c = client(cluster.servers, 5000)) {
      long[] ids = c.ids("orders", 500);
      Set<Long> seen = new HashSet<>();
      for (int i = 0; i < ids.length; i++) {
        assertTrue(seen.add(ids[i]));
        assertTrue(i == 0 || ids[i] > ids[i - 1]);
      }
      long ms = (c.id("orders") >> 22) + EPOCH_MS;
      assertTrue(Math.abs(ms - System.currentTimeMillis()) < 5000);
      List<String> uuids = c.uuids("orders", 2);
      assertEquals('7', uuids.get(0).charAt(14));
      long[] opaque = c.ids("orders", 100, "opaque");
      Set<Long> distinct = new HashSet<>();
      boolean sorted = true;
      for (int i = 0; i < opaque.length; i++) {
        assertTrue(opaque[i] >= 0); // 63 bits
        distinct.add(opaque[i]);
        sorted &= i == 0 || opaque[i] > opaque[i - 1];
      }
      assertEquals(100, distinct.size());
      assertTrue(!sorted, "a keyed permutation: no order shows");
    }
  }

  @Test
  void badRequestsAreRequestExceptionsAtOnce() throws Exception {
    try (Client c = client(cluster.servers, 5000)) {
      long started = System.nanoTime();
      RequestException big = assertThrows(RequestException.class, () -> c.ids("orders", 1_000_000));
      assertEquals(400, big.status());
      assertEquals("bad_count", big.code());
      assertEquals("unknown_sequence", assertThrows(RequestException.class, () -> c.nextSeq("no-such")).code());
      assertThrows(RequestException.class, () -> c.id("no/such"));
      assertTrue(System.nanoTime() - started < 2_000_000_000L);
    }
  }

  @Test
  void sequenceNumbersWithATemplateAndAPeriod() throws Exception {
    cluster.command("seq create invoice --template INV-{n:06} --start 7");
    cluster.command("seq create daily --reset daily --time-zone UTC --template D{yyyy}{MM}{dd}-{n}");
    try (Client c = client(cluster.servers, 5000)) {
      SeqNumber n = c.nextSeq("invoice");
      assertTrue(n.number() >= 7);
      assertEquals(String.format("INV-%06d", n.number()), n.text());
      assertEquals(null, n.period());
      SeqNumber d = c.nextSeq("daily");
      assertTrue(d.text().startsWith("D" + d.period().replace("-", "") + "-"), d.toString());
    }
  }

  @Test
  void aKilledReplicaIsPassedOver() throws Exception {
    try (Client c = client(cluster.servers, 5000)) {
      cluster.command("kill 0");
      try {
        Set<Long> seen = new HashSet<>();
        for (int i = 0; i < 50; i++) for (long id : c.ids("failover", 10)) seen.add(id);
        assertEquals(500, seen.size());
      } finally {
        cluster.command("start 0");
        cluster.command("ready");
      }
    }
  }

  @Test
  void aFrozenReplicaCostsItsShareOfTheTimeOnly() throws Exception {
    Client.shuffler = order -> {}; // the frozen one asked first
    try (Client c = client(cluster.servers, 4000)) {
      cluster.command("stop 0");
      try {
        long started = System.nanoTime();
        assertTrue(c.id("frozen") > 0);
        long took = (System.nanoTime() - started) / 1_000_000;
        assertTrue(took > 1900 && took < 3000, "the call took " + took + " ms");
      } finally {
        cluster.command("cont 0");
        cluster.command("ready");
      }
    } finally {
      Client.shuffler = order -> Collections.shuffle(order, ThreadLocalRandom.current());
    }
  }

  @Test
  void refusalsAreHonouredAndNamed() throws Exception {
    try (Client c = client(cluster.servers, 1000)) {
      cluster.command("zkstop");
      try {
        Cluster.eventually(10_000, "both refuse lease_expired", () -> {
          try {
            c.id("refused");
            return false;
          } catch (UnavailableException e) {
            return e.failures().size() == 2 && e.failures().values().stream().allMatch("lease_expired"::equals);
          } catch (SnowflakedException e) {
            return false;
          }
        });
      } finally {
        cluster.command("zkcont");
        cluster.command("ready");
      }
    }
    try (Client patient = client(cluster.servers, 20_000)) {
      assertTrue(patient.id("refused") > 0);
    }
  }

  @Test
  void everyReplicaGoneIsUnavailableAtOnce() throws Exception {
    try (Client c = client(List.of("http://127.0.0.1:1", "http://127.0.0.1:2"), 5000)) {
      long started = System.nanoTime();
      UnavailableException e = assertThrows(UnavailableException.class, () -> c.id("x"));
      assertTrue(System.nanoTime() - started < 1_000_000_000L);
      assertEquals(Set.of("connection refused"), new HashSet<>(e.failures().values()));
    }
  }

  @Test
  void tlsWithACAFile() throws Exception {
    try (Cluster tls = new Cluster(true)) {
      try (Client c = new Client(tls.servers, tls.caCert, Duration.ofSeconds(5))) {
        assertEquals(100, c.ids("tls", 100).length);
      }
      try (Client untrusted = client(tls.servers, 1000)) {
        UnavailableException e = assertThrows(UnavailableException.class, () -> untrusted.id("tls"));
        assertTrue(e.failures().values().stream().allMatch(v -> v.contains("not trusted")), e.getMessage());
      }
    }
  }

  @Test
  void oneClientServesManyThreads() throws Exception {
    try (Client c = client(cluster.servers, 5000)) {
      Set<Long> seen = Collections.synchronizedSet(new HashSet<>());
      List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
      List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < 8; t++) {
        threads.add(new Thread(() -> {
          try {
            for (int i = 0; i < 20; i++) for (long id : c.ids("threads", 5)) seen.add(id);
          } catch (Throwable e) {
            errors.add(e);
          }
        }));
      }
      threads.forEach(Thread::start);
      for (Thread t : threads) t.join();
      assertTrue(errors.isEmpty(), errors.toString());
      assertEquals(800, seen.size());
    }
  }

  @Test
  void theVersionIsTheServers() throws Exception {
    String cmake = java.nio.file.Files.readString(java.nio.file.Path.of("..", "..", "CMakeLists.txt"));
    assertTrue(cmake.contains("project(snowflaked VERSION " + Client.VERSION + " "));
  }
}
