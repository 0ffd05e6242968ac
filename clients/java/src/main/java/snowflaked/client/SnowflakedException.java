package snowflaked.client;

/** Base of every error this library throws (clients/README.md: the same names in every language). */
public class SnowflakedException extends Exception {
  private static final long serialVersionUID = 1L;

  public SnowflakedException(String message) {
    super(message);
  }

  public SnowflakedException(String message, Throwable cause) {
    super(message, cause);
  }
}
