package snowflaked.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * IDs of a tag fetched ahead in batches (at most the daemons' http.max_batch), refilled once
 * lowWater or fewer are left, none handed out older than maxAge. Thread-safe; close() stops it.
 */
public final class IdBuffer extends Buffer<Long> {
  public IdBuffer(Client client, String tag, int batch, int lowWater, Duration maxAge, String form) {
    super(client, n -> boxed(client.ids(tag, n, form)), batch, lowWater, maxAge.toNanos(),
        "snowflaked-ids-" + tag);
  }

  /** Batches of 1000, refilled at a quarter left, none older than a second. */
  public IdBuffer(Client client, String tag) {
    this(client, tag, 1000, 250, Duration.ofSeconds(1), null);
  }

  private static List<Long> boxed(long[] ids) {
    List<Long> out = new ArrayList<>(ids.length);
    for (long id : ids) out.add(id);
    return out;
  }

  /** The next ID (see Buffer.next). */
  public long nextId() throws SnowflakedException {
    return next();
  }
}
