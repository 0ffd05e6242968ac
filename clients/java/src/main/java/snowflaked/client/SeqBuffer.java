package snowflaked.client;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * Numbers of a per-daemon sequence fetched ahead, as IdBuffer does. Refused (a RequestException),
 * at the start and before each batch: a strict tag ("strict_sequence": its numbers keep their
 * real-time order only one request at a time), a tag that restarts each period
 * ("periodic_sequence": a buffer would hand out the last period's numbers after the turn; the
 * first batch, of one number, tells when the cluster's listing does not yet) and one the cluster
 * does not list ("unknown_sequence").
 */
public final class SeqBuffer extends Buffer<SeqNumber> {
  public SeqBuffer(Client client, String tag, int batch, int lowWater, Duration maxAge)
      throws SnowflakedException {
    super(client, fetcher(client, tag), batch, lowWater, maxAge.toNanos(), "snowflaked-seq-" + tag);
  }

  public SeqBuffer(Client client, String tag) throws SnowflakedException {
    this(client, tag, 100, 25, Duration.ofMinutes(1));
  }

  private static Fetch<SeqNumber> fetcher(Client client, String tag) throws SnowflakedException {
    checkBufferable(client, tag);
    boolean[] first = {true}; // only the refill thread fetches
    return n -> {
      checkBufferable(client, tag);
      List<SeqNumber> numbers = client.seq(tag, first[0] ? 1 : n);
      for (SeqNumber number : numbers) {
        if (number.period() != null) throw periodic(tag);
      }
      first[0] = false;
      return numbers;
    };
  }

  private static RequestException periodic(String tag) {
    return new RequestException(409, "periodic_sequence", "sequence " + tag + " restarts each period: ask Client.nextSeq");
  }

  @SuppressWarnings("unchecked")
  private static void checkBufferable(Client client, String tag) throws SnowflakedException {
    Map<String, Object> body = Json.object(client.request("GET", "/ready?for=seq"));
    Object tags = body.get("sequences");
    Object entry = tags instanceof Map ? ((Map<String, Object>) tags).get(tag) : null;
    if (!(entry instanceof Map)) {
      throw new RequestException(404, "unknown_sequence", "sequence " + tag + " is not listed by the cluster (yet)");
    }
    Map<String, Object> e = (Map<String, Object>) entry;
    if ("strict".equals(e.get("order"))) {
      throw new RequestException(409, "strict_sequence", "sequence " + tag + " is strict: ask Client.nextSeq for each number");
    }
    if (e.containsKey("reset")) throw periodic(tag);
  }
}
