package snowflaked.client;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * How a leased generator composes an ID, as the daemons compose theirs: bit widths, the order of
 * the fields from the most significant bit down, the time unit and the epoch. A lease of the
 * cluster's pool carries the cluster's; a named pool's holder gives its own.
 */
public record Layout(int timeBits, int datacenterBits, int workerBits, int sequenceBits,
    String order, long timeUnitMs, long epochMs) {

  /** The daemons' default: 41 bits of ms since 2025-01-01, 10 of worker ID, 12 of sequence. */
  public static final Layout DEFAULT =
      new Layout(41, 0, 10, 12, "time,datacenter,worker,sequence", 1, 1735689600000L);

  public Layout {
    List<String> fields = new ArrayList<>(Arrays.asList(order.split(",")));
    if (!fields.contains("datacenter") && datacenterBits == 0) fields.add("datacenter");
    List<String> sorted = new ArrayList<>(fields);
    sorted.sort(null);
    if (!sorted.equals(List.of("datacenter", "sequence", "time", "worker"))) {
      throw new IllegalArgumentException(
          "layout order " + order + ": each of time, datacenter, worker, sequence once");
    }
    if (timeBits + datacenterBits + workerBits + sequenceBits > 63 || timeBits < 1
        || sequenceBits < 0 || workerBits < 0 || datacenterBits < 0 || timeUnitMs < 1) {
      throw new IllegalArgumentException("layout: at most 63 bits, a time field, a unit of 1 ms or more");
    }
  }

  static Layout fromLease(Map<String, Object> l) {
    return new Layout(((Long) l.get("time_bits")).intValue(),
        ((Long) l.get("datacenter_bits")).intValue(), ((Long) l.get("worker_bits")).intValue(),
        ((Long) l.get("sequence_bits")).intValue(), (String) l.get("order"),
        (Long) l.get("time_unit_ms"), (Long) l.get("epoch_ms"));
  }

  /** Each field's shift: time, datacenter, worker, sequence. */
  int[] shifts() {
    List<String> fields = new ArrayList<>(Arrays.asList(order.split(",")));
    if (!fields.contains("datacenter")) fields.add("datacenter");
    int[] out = new int[4];
    int below = 0;
    for (int i = fields.size() - 1; i >= 0; i--) {
      String f = fields.get(i);
      int index = List.of("time", "datacenter", "worker", "sequence").indexOf(f);
      out[index] = below;
      below += switch (f) {
        case "time" -> timeBits;
        case "datacenter" -> datacenterBits;
        case "worker" -> workerBits;
        default -> sequenceBits;
      };
    }
    return out;
  }

  /** The time unit an instant (ms since 1970) falls in. */
  public long unitOf(long ms) {
    return Math.floorDiv(ms - epochMs, timeUnitMs);
  }

  /** The first millisecond of a unit. */
  public long unitStart(long unit) {
    return epochMs + unit * timeUnitMs;
  }
}
