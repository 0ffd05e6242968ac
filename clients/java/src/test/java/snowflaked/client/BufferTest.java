package snowflaked.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** IdBuffer and SeqBuffer against a real cluster. */
class BufferTest extends WithCluster {


  @Test
  void idsComeFromTheBufferUniqueAndRisingPerDaemon() throws Exception {
    try (Client c = ClientTest.client(cluster.servers, 5000);
        IdBuffer b = new IdBuffer(c, "buffered", 200, 50, Duration.ofSeconds(1), null)) {
      Set<Long> seen = new HashSet<>();
      Map<Long, Long> last = new HashMap<>();
      for (int i = 0; i < 2000; i++) {
        long id = b.nextId();
        long worker = id >> 12 & 1023;
        assertTrue(seen.add(id));
        assertTrue(id > last.getOrDefault(worker, 0L));
        last.put(worker, id);
      }
    }
  }

  @Test
  void noIdOlderThanTheBoundIsHandedOut() throws Exception {
    try (Client c = ClientTest.client(cluster.servers, 5000);
        IdBuffer b = new IdBuffer(c, "aged", 1000, 0, Duration.ofMillis(200), null)) {
      long oldest = 0;
      for (int i = 0; i < 60; i++) { // paced slower than a batch lasts: batches go stale while held
        // Its age when nextId began: the buffer judges it later, so at most maxAge (counted from
        // when its batch was asked for, before the daemon stamped it), plus the millisecond its
        // stamp is floored to and one for the wall clock's slew. (A reading after the call adds whatever a loaded host delays.)
        long before = System.currentTimeMillis();
        long id = b.nextId();
        oldest = Math.max(oldest, before - ((id >> 22) + ClientTest.EPOCH_MS));
        Thread.sleep(10);
      }
      assertTrue(oldest <= 202, "an ID " + oldest + " ms old handed out");
    }
  }

  @Test
  void aBufferOverABadTagThrowsTheRefusalAtOnce() throws Exception {
    try (Client c = ClientTest.client(cluster.servers, 5000); IdBuffer b = new IdBuffer(c, "no/such")) {
      long started = System.nanoTime();
      assertThrows(RequestException.class, b::nextId);
      assertTrue(System.nanoTime() - started < 3_000_000_000L);
    }
  }

  @Test
  void sequenceNumbersBufferedButNeverAStrictPeriodicOrUnknownTags() throws Exception {
    cluster.command("seq create tickets");
    cluster.command("seq create chat --order strict");
    cluster.command("seq create days --reset daily --time-zone UTC --template D{yyyy}{MM}{dd}-{n}");
    try (Client c = ClientTest.client(cluster.servers, 5000)) {
      assertEquals("unknown_sequence", assertThrows(RequestException.class, () -> new SeqBuffer(c, "never-created")).code());
      SeqBuffer[] made = new SeqBuffer[1];
      Cluster.eventually(10_000, "tickets listed", () -> {
        try {
          made[0] = new SeqBuffer(c, "tickets", 20, 5, Duration.ofMinutes(1));
          return true;
        } catch (SnowflakedException e) {
          return false;
        }
      });
      try (SeqBuffer b = made[0]) {
        Set<Long> seen = new HashSet<>();
        for (int i = 0; i < 100; i++) assertTrue(seen.add(b.next().number()));
      }
      for (String[] tagCode : new String[][] {{"chat", "strict_sequence"}, {"days", "periodic_sequence"}}) {
        Cluster.eventually(10_000, tagCode[0] + " refused " + tagCode[1], () -> {
          try (SeqBuffer b = new SeqBuffer(c, tagCode[0])) { // listed, its kind not known yet:
            b.next(); // the first batch tells
            return false;
          } catch (RequestException e) {
            return e.code().equals(tagCode[1]);
          } catch (SnowflakedException e) {
            return false;
          }
        });
      }
    }
  }

  @Test
  void anIdleBufferFetchesNothing() throws Exception {
    try (Client c = ClientTest.client(cluster.servers, 5000);
        IdBuffer b = new IdBuffer(c, "idle", 10, 2, Duration.ofMillis(50), null)) {
      b.nextId();
      // The take asks for one refill (its batch for the next take), which goes stale too.
      Cluster.eventually(5000, "the refill after the take, gone stale", () -> issued("idle") == 20 && b.size() == 0);
      Thread.sleep(500); // the span over which an idle buffer must not fetch
      assertEquals(20, issued("idle"));
    }
  }

  /** IDs of the tag the daemons issued, by their metrics. */
  static long issued(String tag) {
    long total = 0;
    HttpClient http = HttpClient.newHttpClient();
    for (String server : cluster.servers) {
      try {
        String text = http.send(HttpRequest.newBuilder(URI.create(server + "/metrics")).build(),
            HttpResponse.BodyHandlers.ofString()).body();
        String prefix = "snowflake_tag_ids_issued_total{tag=\"" + tag + "\"} ";
        for (String line : text.split("\n")) {
          if (line.startsWith(prefix)) total += (long) Double.parseDouble(line.substring(prefix.length()));
        }
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    }
    return total;
  }
}
