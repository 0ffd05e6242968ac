package snowflaked.client;

/**
 * A 4xx answer: the request is one every replica refuses the same way (a bad tag or count, an
 * unknown sequence, one with no number left). Asking again does not help; nothing was issued.
 */
public class RequestException extends SnowflakedException {
  private static final long serialVersionUID = 1L;

  private final int status;
  private final String code;

  public RequestException(int status, String code, String message) {
    super(status + " " + code + ": " + message);
    this.status = status;
    this.code = code;
  }

  public int status() {
    return status;
  }

  public String code() {
    return code;
  }
}
