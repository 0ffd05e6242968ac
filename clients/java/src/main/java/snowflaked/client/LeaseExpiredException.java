package snowflaked.client;

/**
 * The leased generator makes no ID now: its lease ran out unrenewed (a new one is being taken),
 * the clock is past the grant's time fence, before its first timestamp, or stepped back further
 * than it waits.
 */
public class LeaseExpiredException extends SnowflakedException {
  private static final long serialVersionUID = 1L;

  public LeaseExpiredException(String message) {
    super(message);
  }
}
