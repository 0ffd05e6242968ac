package snowflaked.client;

/** The object was closed. */
public class ClosedException extends SnowflakedException {
  private static final long serialVersionUID = 1L;

  public ClosedException(String message) {
    super(message);
  }
}
