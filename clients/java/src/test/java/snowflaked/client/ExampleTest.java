package snowflaked.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The example as its README says to run it, in each mode. */
class ExampleTest extends WithCluster {


  static Process run(String servers, String... args) throws Exception {
    String[] command = new String[args.length + 1];
    command[0] = "examples/ids.sh";
    System.arraycopy(args, 0, command, 1, args.length);
    ProcessBuilder pb = new ProcessBuilder(command);
    pb.environment().put("SNOWFLAKED_SERVERS", servers);
    return pb.start();
  }

  @Test
  void theExamplePrintsIdsInEachMode() throws Exception {
    Set<Long> seen = new HashSet<>();
    for (String mode : new String[] {"remote", "buffered", "leased"}) {
      Process p = run(String.join(",", cluster.servers), "--mode", mode, "--count", "25");
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
      assertEquals(0, p.waitFor(), err);
      String[] lines = out.trim().split("\n");
      assertEquals(25, lines.length);
      for (String line : lines) assertTrue(seen.add(Long.parseLong(line)));
    }
  }

  @Test
  void theExampleFailsWithTheErrorOnStderr() throws Exception {
    Process p = run("http://127.0.0.1:1", "--count", "1");
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(1, p.waitFor());
    assertEquals("", out);
    assertTrue(err.contains("connection refused"), err);
  }
}
