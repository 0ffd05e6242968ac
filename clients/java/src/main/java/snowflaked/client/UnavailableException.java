package snowflaked.client;

import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * No replica issued: none said 503 (all down: nothing to wait for), or the shortest Retry-After
 * ends past the time allowed. {@link #failures()} maps each replica asked to its last error: a
 * stable 503 code ("lease_expired", ...) or what went wrong with the connection.
 */
public class UnavailableException extends SnowflakedException {
  private static final long serialVersionUID = 1L;

  private final Map<String, String> failures;

  public UnavailableException(String reason, Map<String, String> failures) {
    super(describe(reason, failures));
    this.failures = Map.copyOf(failures);
  }

  private static String describe(String reason, Map<String, String> failures) {
    if (failures.isEmpty()) return reason;
    return reason + ": " + new TreeMap<>(failures).entrySet().stream()
        .map(e -> e.getKey() + " (" + e.getValue() + ")").collect(Collectors.joining(", "));
  }

  public Map<String, String> failures() {
    return failures;
  }
}
