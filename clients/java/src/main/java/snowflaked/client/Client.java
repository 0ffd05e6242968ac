package snowflaked.client;

import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.TrustManagerFactory;

/**
 * A client of a snowflaked cluster. It asks the replicas as {@code snowflaked get} does
 * (docs/api.md#from-shell-scripts-snowflaked-get): in a random order, the next one at once on a
 * 503 or a connection that fails, each given its share of the time left; when replicas said 503,
 * again after the shortest Retry-After; none said 503 (all down), nothing to wait for.
 * Connections are kept alive. Thread-safe: one Client serves every thread of a process.
 */
public final class Client implements AutoCloseable {
  /** The server's version this client was made with. */
  public static final String VERSION = "0.5.0";

  public static final String DEFAULT_SERVER = "http://127.0.0.1:8080";

  /** Orders the replicas of a round (a test fixes it). */
  static volatile java.util.function.Consumer<List<String>> shuffler =
      order -> Collections.shuffle(order, ThreadLocalRandom.current());

  private final List<String> servers;
  private final Duration timeout;
  private final HttpClient http;
  private volatile boolean closed;

  /**
   * @param servers replica URLs; empty: $SNOWFLAKED_SERVERS (comma-separated), else
   *     http://127.0.0.1:8080
   * @param caCert a PEM file of the CAs an https replica's certificate must chain to; null:
   *     $SNOWFLAKED_CACERT, else the system's CAs
   * @param timeout what a call may take, every replica and retry included
   */
  public Client(List<String> servers, Path caCert, Duration timeout) throws SnowflakedException {
    List<String> urls = new ArrayList<>();
    if (servers == null || servers.isEmpty()) {
      String env = System.getenv("SNOWFLAKED_SERVERS");
      if (env != null) {
        for (String s : env.split(",")) if (!s.isBlank()) urls.add(s.strip());
      }
      if (urls.isEmpty()) urls.add(DEFAULT_SERVER);
    } else {
      urls.addAll(servers);
    }
    for (int i = 0; i < urls.size(); i++) {
      URI uri = URI.create(urls.get(i));
      if (!"http".equals(uri.getScheme()) && !"https".equals(uri.getScheme()) || uri.getHost() == null) {
        throw new IllegalArgumentException("replica " + urls.get(i) + ": http://HOST[:PORT] or https://HOST[:PORT]");
      }
      urls.set(i, urls.get(i).replaceAll("/+$", ""));
    }
    this.servers = List.copyOf(urls);
    this.timeout = timeout == null ? Duration.ofSeconds(5) : timeout;
    HttpClient.Builder builder = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .followRedirects(HttpClient.Redirect.NEVER);
    if (caCert == null && System.getenv("SNOWFLAKED_CACERT") != null) {
      caCert = Path.of(System.getenv("SNOWFLAKED_CACERT"));
    }
    if (caCert != null) builder.sslContext(trusting(caCert));
    this.http = builder.build();
  }

  /** A client of $SNOWFLAKED_SERVERS with a 5 s timeout. */
  public Client() throws SnowflakedException {
    this(null, null, null);
  }

  private static SSLContext trusting(Path caCert) throws SnowflakedException {
    try (InputStream in = Files.newInputStream(caCert)) {
      KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
      store.load(null, null);
      int i = 0;
      for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
        store.setCertificateEntry("ca-" + i++, c);
      }
      if (i == 0) throw new SnowflakedException("CA file " + caCert + ": no PEM certificate");
      TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(store);
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(null, tmf.getTrustManagers(), null);
      return context;
    } catch (IOException | GeneralSecurityException e) {
      throw new SnowflakedException("CA file " + caCert + ": " + e.getMessage(), e);
    }
  }

  public List<String> servers() {
    return servers;
  }

  public Duration timeout() {
    return timeout;
  }

  /** {@code count} IDs of {@code tag} in the tag's own form, or "plain" or "opaque". */
  public long[] ids(String tag, int count, String form) throws SnowflakedException {
    if ("uuid".equals(form)) throw new IllegalArgumentException("UUIDs are strings: ask uuids()");
    List<String> texts = idTexts(tag, count, form);
    long[] out = new long[texts.size()];
    for (int i = 0; i < out.length; i++) {
      try {
        out[i] = Long.parseLong(texts.get(i));
      } catch (NumberFormatException e) {
        throw new RequestException(400, "bad_form", tag + " is handed out as " + texts.get(i) + ": ask uuids()");
      }
    }
    return out;
  }

  public long[] ids(String tag, int count) throws SnowflakedException {
    return ids(tag, count, null);
  }

  public long id(String tag) throws SnowflakedException {
    return ids(tag, 1, null)[0];
  }

  /** {@code count} IDs of {@code tag} as RFC 9562 UUIDv7s. */
  public List<String> uuids(String tag, int count) throws SnowflakedException {
    return idTexts(tag, count, "uuid");
  }

  @SuppressWarnings("unchecked")
  private List<String> idTexts(String tag, int count, String form) throws SnowflakedException {
    String target = "/id/" + encode(tag) + "?count=" + count + (form == null ? "" : "&form=" + encode(form));
    List<String> ids = (List<String>) Json.object(request("GET", target)).get("ids");
    if (ids == null || ids.size() != count) {
      throw new UnavailableException(count + " IDs asked for, an answer without them", Map.of());
    }
    return ids;
  }

  /** The next {@code count} numbers of the dense sequence {@code tag}. */
  @SuppressWarnings("unchecked")
  public List<SeqNumber> seq(String tag, int count) throws SnowflakedException {
    Map<String, Object> body = Json.object(request("GET", "/seq/" + encode(tag) + "?count=" + count));
    List<String> texts = (List<String>) body.get("ids");
    List<String> numbers = (List<String>) body.getOrDefault("numbers", texts);
    if (texts == null || texts.size() != count || numbers.size() != count) {
      throw new UnavailableException(count + " numbers asked for, an answer without them", Map.of());
    }
    List<SeqNumber> out = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      out.add(new SeqNumber(Long.parseLong(numbers.get(i)), texts.get(i), (String) body.get("period")));
    }
    return out;
  }

  public SeqNumber nextSeq(String tag) throws SnowflakedException {
    return seq(tag, 1).get(0);
  }

  static String encode(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }

  /** Sends {@code method target} to the replicas until one answers 2xx; its body. */
  public String request(String method, String target) throws SnowflakedException {
    return request(method, target, timeout);
  }

  String request(String method, String target, Duration allowed) throws SnowflakedException {
    if (closed) throw new ClosedException("the client is closed");
    long deadline = System.nanoTime() + allowed.toNanos();
    Map<String, String> failures = new HashMap<>();
    while (true) {
      List<String> order = new ArrayList<>(servers);
      shuffler.accept(order);
      long retryAfter = -1;
      for (int i = 0; i < order.size(); i++) {
        long left = deadline - System.nanoTime();
        if (left <= 0) break;
        // An even share of the time left for each replica not yet asked.
        long shareEnd = System.nanoTime() + left / (order.size() - i);
        String server = order.get(i);
        HttpResponse<String> reply;
        String ownerError = "";
        try {
          reply = send(method, server + target, shareEnd);
          String owner = namedOwner(reply, server);
          if (owner != null) {
            try {
              reply = send(method, owner + target, shareEnd); // a strict tag's owner, once
            } catch (IOException e) {
              ownerError = " (its owner " + owner + ": " + describe(e) + ")";
            }
          }
        } catch (IOException e) {
          failures.put(server, describe(e));
          continue;
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new ClosedException("interrupted");
        }
        int status = reply.statusCode();
        if (status >= 200 && status < 300) {
          try {
            Json.parse(reply.body());
          } catch (IllegalArgumentException e) {
            failures.put(server, "an answer that is not JSON");
            continue;
          }
          return reply.body();
        }
        String[] error = errorOf(reply);
        if (status == 503) {
          failures.put(server, error[0] + ownerError);
          long wait = reply.headers().firstValue("Retry-After").map(Client::seconds).orElse(1_000_000_000L);
          retryAfter = retryAfter < 0 ? wait : Math.min(retryAfter, wait);
          continue;
        }
        if (status >= 400 && status < 500 && status != 408) {
          throw new RequestException(status, error[0], error[1]);
        }
        failures.put(server, status + " " + error[0]);
      }
      if (retryAfter < 0 || retryAfter >= deadline - System.nanoTime()) {
        throw new UnavailableException("no replica answered within " + allowed.toMillis() + " ms", failures);
      }
      try {
        Thread.sleep(Math.max(50, retryAfter / 1_000_000));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new ClosedException("interrupted");
      }
      if (closed) throw new ClosedException("the client was closed");
    }
  }

  /**
   * One exchange, done by endNanos, the body included (HttpRequest.timeout ends at the headers:
   * a replica stalling mid-answer would hold the call for ever).
   */
  private HttpResponse<String> send(String method, String url, long endNanos)
      throws IOException, InterruptedException {
    long left = Math.max(1_000_000, endNanos - System.nanoTime());
    HttpRequest request;
    try {
      request = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofNanos(left))
          .header("Accept", "application/json").method(method, HttpRequest.BodyPublishers.noBody()).build();
    } catch (IllegalArgumentException e) {
      throw new IOException("not a URL: " + url, e);
    }
    CompletableFuture<HttpResponse<String>> exchange = http.sendAsync(request, HttpResponse.BodyHandlers.ofString());
    try {
      return exchange.get(left, TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      exchange.cancel(true);
      throw new HttpTimeoutException("timed out");
    } catch (ExecutionException e) {
      if (e.getCause() instanceof IOException io) throw io;
      throw new IOException(e.getCause());
    } catch (InterruptedException e) {
      exchange.cancel(true);
      throw e;
    }
  }

  /** Retry-After in ns: 1 s if it is not a number of seconds, at most an hour. */
  private static long seconds(String retryAfter) {
    try {
      double s = Double.parseDouble(retryAfter);
      if (!(s >= 0)) return 1_000_000_000L;
      return (long) (Math.min(s, 3600) * 1e9);
    } catch (NumberFormatException e) {
      return 1_000_000_000L;
    }
  }

  /** The URL of the owner a strict tag's 503 not_owner names (the refusing replica's scheme). */
  private static String namedOwner(HttpResponse<String> reply, String refusedBy) {
    if (reply.statusCode() != 503) return null;
    try {
      Map<String, Object> body = Json.object(reply.body());
      if (!"not_owner".equals(body.get("error"))) return null;
      if (body.get("owner_url") instanceof String url && !url.isEmpty()) return url.replaceAll("/+$", "");
      if (body.get("owner") instanceof String owner && !owner.isEmpty()) {
        return refusedBy.substring(0, refusedBy.indexOf("://") + 3) + owner;
      }
    } catch (IllegalArgumentException e) {
      return null;
    }
    return null;
  }

  private static String[] errorOf(HttpResponse<String> reply) {
    try {
      Map<String, Object> body = Json.object(reply.body());
      if (body.get("error") instanceof String code) {
        return new String[] {code, String.valueOf(body.getOrDefault("message", ""))};
      }
    } catch (IllegalArgumentException e) {
      // not ours: the status says it
    }
    String text = reply.body();
    return new String[] {String.valueOf(reply.statusCode()), text.substring(0, Math.min(200, text.length()))};
  }

  private static String describe(IOException e) {
    if (e instanceof SSLHandshakeException) return "TLS: the replica's certificate is not trusted: " + e.getMessage();
    if (e instanceof HttpConnectTimeoutException || e instanceof HttpTimeoutException) return "timed out";
    if (e instanceof ConnectException) return "connection refused";
    return e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
  }

  /** The client takes no more calls (its connections go with it). */
  @Override
  public void close() {
    closed = true;
  }
}
