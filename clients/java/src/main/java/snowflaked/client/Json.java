package snowflaked.client;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JSON the daemons answer, read into maps, lists, strings, longs, doubles, booleans and null:
 * the standard library has no parser, and the answers are small and flat.
 */
final class Json {
  private static final int MAX_DEPTH = 64; // the daemons' answers nest two or three deep
  private final String text;
  private int at;
  private int depth;

  private Json(String text) {
    this.text = text;
  }

  /** The value; IllegalArgumentException for anything but one well-formed JSON value. */
  static Object parse(String text) {
    Json p = new Json(text);
    try {
      p.space();
      Object value = p.value();
      p.space();
      if (p.at != text.length()) throw p.error("trailing text");
      return value;
    } catch (IndexOutOfBoundsException | NumberFormatException e) {
      throw p.error("malformed: " + e.getMessage());
    }
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> object(String text) {
    Object value = parse(text);
    if (!(value instanceof Map)) throw new IllegalArgumentException("not a JSON object");
    return (Map<String, Object>) value;
  }

  private IllegalArgumentException error(String what) {
    return new IllegalArgumentException("JSON: " + what + " at " + at);
  }

  private void space() {
    while (at < text.length() && " \t\r\n".indexOf(text.charAt(at)) >= 0) at++;
  }

  private Object value() {
    if (at >= text.length()) throw error("end of text");
    char c = text.charAt(at);
    switch (c) {
      case '{':
        return object();
      case '[':
        return array();
      case '"':
        return string();
      case 't':
        return literal("true", Boolean.TRUE);
      case 'f':
        return literal("false", Boolean.FALSE);
      case 'n':
        return literal("null", null);
      default:
        return number();
    }
  }

  private Object literal(String word, Object value) {
    if (!text.startsWith(word, at)) throw error("unexpected text");
    at += word.length();
    return value;
  }

  private void deeper() {
    if (++depth > MAX_DEPTH) throw error("nested too deep");
  }

  private Map<String, Object> object() {
    deeper();
    Map<String, Object> map = new LinkedHashMap<>();
    at++;
    space();
    if (at < text.length() && text.charAt(at) == '}') {
      at++;
      depth--;
      return map;
    }
    while (true) {
      space();
      String key = string();
      space();
      expect(':');
      space();
      map.put(key, value());
      space();
      if (at < text.length() && text.charAt(at) == ',') {
        at++;
        continue;
      }
      expect('}');
      depth--;
      return map;
    }
  }

  private List<Object> array() {
    deeper();
    List<Object> list = new ArrayList<>();
    at++;
    space();
    if (at < text.length() && text.charAt(at) == ']') {
      at++;
      depth--;
      return list;
    }
    while (true) {
      space();
      list.add(value());
      space();
      if (at < text.length() && text.charAt(at) == ',') {
        at++;
        continue;
      }
      expect(']');
      depth--;
      return list;
    }
  }

  private void expect(char c) {
    if (at >= text.length() || text.charAt(at) != c) throw error("'" + c + "' expected");
    at++;
  }

  private String string() {
    expect('"');
    StringBuilder out = new StringBuilder();
    while (true) {
      if (at >= text.length()) throw error("unterminated string");
      char c = text.charAt(at++);
      if (c == '"') return out.toString();
      if (c != '\\') {
        out.append(c);
        continue;
      }
      char e = text.charAt(at++);
      switch (e) {
        case 'n' -> out.append('\n');
        case 't' -> out.append('\t');
        case 'r' -> out.append('\r');
        case 'b' -> out.append('\b');
        case 'f' -> out.append('\f');
        case 'u' -> {
          String hex = text.substring(at, at + 4);
          if (!hex.matches("[0-9a-fA-F]{4}")) throw error("a \\u escape of four hex digits expected");
          out.append((char) Integer.parseInt(hex, 16));
          at += 4;
        }
        default -> out.append(e);
      }
    }
  }

  private Object number() {
    int start = at;
    while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) at++;
    String n = text.substring(start, at);
    if (n.isEmpty()) throw error("a value expected");
    if (n.indexOf('.') < 0 && n.indexOf('e') < 0 && n.indexOf('E') < 0) return Long.parseLong(n);
    return Double.parseDouble(n);
  }
}
