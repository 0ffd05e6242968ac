package snowflaked.client;

/**
 * A number of a dense sequence: {@code number} as it is, {@code text} as the tag's template prints
 * it (the number in decimal without one), and the {@code period} it belongs to ("2026-11-26") for
 * a tag that restarts each period, else null.
 */
public record SeqNumber(long number, String text, String period) {}
