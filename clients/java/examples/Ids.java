import snowflaked.client.Client;
import snowflaked.client.IdBuffer;
import snowflaked.client.LeasedGenerator;
import snowflaked.client.SnowflakedException;

/**
 * Prints N IDs, one a line, from the servers in $SNOWFLAKED_SERVERS (and $SNOWFLAKED_CACERT for
 * https): straight from the service (remote), through a local buffer (buffered), or made here
 * over a leased worker ID (leased).
 */
public class Ids {
  interface Next {
    long get() throws SnowflakedException;
  }

  public static void main(String[] args) throws Exception {
    String mode = "remote";
    int count = 1;
    String tag = "example";
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--mode" -> mode = args[i + 1];
        case "--count" -> count = Integer.parseInt(args[i + 1]);
        case "--tag" -> tag = args[i + 1];
        default -> {
          System.err.println("ids: --mode remote|buffered|leased --count N [--tag T]");
          System.exit(2);
        }
      }
    }
    try (Client client = new Client()) {
      switch (mode) {
        case "remote" -> {
          final String t = tag;
          print(() -> client.id(t), count);
        }
        case "buffered" -> {
          try (IdBuffer buffer = new IdBuffer(client, tag)) {
            print(buffer::nextId, count);
          }
        }
        case "leased" -> {
          try (LeasedGenerator generator = new LeasedGenerator(client, "ids-example")) {
            print(generator::nextId, count);
          }
        }
        default -> {
          System.err.println("ids: --mode remote, buffered or leased, not " + mode);
          System.exit(2);
        }
      }
    } catch (SnowflakedException e) {
      System.err.println("ids: " + e.getMessage());
      System.exit(1);
    }
  }

  private static void print(Next next, int count) throws SnowflakedException {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < count; i++) out.append(next.get()).append('\n');
    System.out.print(out);
  }
}
