package snowflaked.client;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * A real cluster started by clients/testing/cluster.py (the harness every language's tests
 * drive): ZooKeeper and two daemons, the binary from $SNOWFLAKED_BIN.
 */
final class Cluster implements AutoCloseable {
  final List<String> servers;
  final Path caCert;
  private final Process process;
  private final BufferedReader out;
  private final Writer in;

  @SuppressWarnings("unchecked")
  Cluster(boolean tls) throws IOException {
    String binary = System.getenv("SNOWFLAKED_BIN");
    if (binary == null) throw new IllegalStateException("SNOWFLAKED_BIN: the snowflaked binary the tests run");
    Path harness = Path.of("..", "testing", "cluster.py").toAbsolutePath();
    ProcessBuilder pb = tls
        ? new ProcessBuilder("/usr/bin/python3", harness.toString(), "--binary", binary, "--daemons", "2", "--tls")
        : new ProcessBuilder("/usr/bin/python3", harness.toString(), "--binary", binary, "--daemons", "2");
    pb.redirectError(ProcessBuilder.Redirect.INHERIT);
    process = pb.start();
    out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    in = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    String line = out.readLine();
    Map<String, Object> info = Json.object(line == null ? "{\"error\":\"exited\"}" : line);
    if (info.containsKey("error")) {
      close();
      throw new IOException("the cluster did not start: " + info.get("error"));
    }
    servers = (List<String>) info.get("servers");
    caCert = info.get("cacert") == null ? null : Path.of((String) info.get("cacert"));
  }

  /** One harness command ("kill 0", "zkstop", "seq create x"); fails the test unless "ok". */
  synchronized void command(String line) {
    try {
      in.write(line + "\n");
      in.flush();
      String answer = out.readLine();
      if (!"ok".equals(answer)) throw new AssertionError(line + ": " + answer);
    } catch (IOException e) {
      throw new AssertionError(line + ": " + e);
    }
  }

  @Override
  public void close() {
    try {
      in.close();
      if (!process.waitFor(60, TimeUnit.SECONDS)) process.destroyForcibly();
    } catch (IOException | InterruptedException e) {
      process.destroyForcibly();
    }
  }

  /** Polls probe until true, or fails after the time given. */
  static void eventually(long millis, String what, BooleanSupplier probe) throws InterruptedException {
    long end = System.nanoTime() + millis * 1_000_000;
    while (System.nanoTime() < end) {
      if (probe.getAsBoolean()) return;
      Thread.sleep(20);
    }
    throw new AssertionError(what + ": not within " + millis + " ms");
  }
}
