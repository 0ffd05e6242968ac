package snowflaked.client;

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The chaos runner's lease holder made of this library's LeasedGenerator (tests/chaos/holders.hpp;
 * chaos_runner --holder-program): the arguments of tests/holders/lease_holder, the same
 * behaviour. It makes IDs in batches and appends each batch to --out, one ID a line, before it
 * makes the next; SIGTERM closes the generator (the lease given back with its last stamp) and
 * exits 0. The chaos runner shifts its processes' wall clocks with libfaketime; run without it
 * (env -u LD_PRELOAD: a JVM under it is not worth the doubt), this applies $FAKETIME ("+S.mmm",
 * "-S.mmm") itself.
 */
public final class ChaosHolder {
  private static volatile boolean stopping;
  private static volatile boolean cleanExit;

  public static void main(String[] args) throws Exception {
    String servers = null;
    String out = null;
    String holder = "lease-holder";
    long durationMs = 1500;
    int batch = 20;
    long pauseMs = 5;
    long timeoutMs = 2000;
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--servers" -> servers = args[i + 1];
        case "--out" -> out = args[i + 1];
        case "--holder" -> holder = args[i + 1];
        case "--duration-ms" -> durationMs = Long.parseLong(args[i + 1]);
        case "--batch" -> batch = Integer.parseInt(args[i + 1]);
        case "--pause-ms" -> pauseMs = Long.parseLong(args[i + 1]);
        case "--timeout-ms" -> timeoutMs = Long.parseLong(args[i + 1]);
        default -> {
          System.err.println("chaos holder: unknown argument " + args[i]);
          System.exit(2);
        }
      }
    }
    if (servers == null || out == null || args.length % 2 != 0) {
      System.err.println("chaos holder: --servers PORT[,PORT...] --out FILE [...]");
      System.exit(2);
    }
    String shift = System.getenv().getOrDefault("FAKETIME", "");
    long shiftMs = shift.isEmpty() ? 0 : Math.round(Double.parseDouble(shift) * 1000);
    List<String> urls = new ArrayList<>();
    for (String port : servers.split(",")) urls.add("http://127.0.0.1:" + port);
    Client client = new Client(urls, null, Duration.ofMillis(timeoutMs));
    Thread main = Thread.currentThread();
    // SIGTERM: the main loop stops and gives the lease back, then the process exits 0 (a JVM
    // ended by a signal would say 143).
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      stopping = true;
      try {
        main.join(20_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      Runtime.getRuntime().halt(cleanExit ? 0 : 1); // a crash of main's is not a clean stop
    }));
    LeasedGenerator generator = null;
    try (FileOutputStream file = new FileOutputStream(out, true)) {
      while (!stopping) {
        if (generator == null) {
          try {
            generator = new LeasedGenerator(client, holder, null, null, Duration.ofMillis(durationMs), null,
                () -> System.currentTimeMillis() + shiftMs);
            System.err.println("took worker ID " + generator.workerId());
          } catch (SnowflakedException e) {
            System.err.println("no lease: " + e.getMessage());
            Thread.sleep(200);
            continue;
          }
        }
        StringBuilder lines = new StringBuilder();
        for (int i = 0; i < batch; i++) {
          try {
            lines.append(generator.nextId()).append('\n');
          } catch (LeaseExpiredException | LeaseLostException e) {
            System.err.println("no ID: " + e.getMessage());
            break;
          }
        }
        if (lines.length() > 0) file.write(lines.toString().getBytes(StandardCharsets.US_ASCII));
        Thread.sleep(pauseMs);
      }
    } catch (IOException e) {
      System.err.println("chaos holder: " + e);
      Runtime.getRuntime().halt(1);
    }
    if (generator != null) {
      try {
        generator.close();
      } catch (SnowflakedException e) {
        System.err.println("give-back: " + e.getMessage()); // not given back: it runs out by itself
      }
    }
    cleanExit = true;
  }
}
