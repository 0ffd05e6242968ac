package snowflaked.client;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The clock a lease's deadline is counted on: one that counts a suspended host's sleep. Java has
 * no CLOCK_BOOTTIME; Linux's /proc/uptime is it, to the hundredth of a second. Elsewhere
 * System.nanoTime(), which stops during a suspend (the time fence still holds: docs/api.md, the
 * holder's contract, point 1).
 */
final class BootClock {
  private static final Path UPTIME = Path.of("/proc/uptime");
  private static final boolean LINUX = Files.isReadable(UPTIME);
  /** What a reading may lag behind: /proc/uptime's resolution. */
  static final long RESOLUTION_NANOS = LINUX ? 10_000_000L : 0;

  private BootClock() {}

  /** Nanoseconds since boot (a reading up to RESOLUTION_NANOS behind). */
  static long nanos() {
    if (!LINUX) return System.nanoTime();
    try {
      String text = Files.readString(UPTIME);
      String seconds = text.substring(0, text.indexOf(' '));
      int dot = seconds.indexOf('.');
      long whole = Long.parseLong(seconds.substring(0, dot));
      long hundredths = Long.parseLong(seconds.substring(dot + 1));
      return whole * 1_000_000_000L + hundredths * 10_000_000L;
    } catch (IOException | RuntimeException e) {
      throw new IllegalStateException("/proc/uptime: " + e, e);
    }
  }
}
