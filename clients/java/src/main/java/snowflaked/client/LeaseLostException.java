package snowflaked.client;

/** The lease is over (410 lease_lost) and a new one is not taken yet: no ID is made with it. */
public class LeaseLostException extends SnowflakedException {
  private static final long serialVersionUID = 1L;

  public LeaseLostException(String message) {
    super(message);
  }
}
