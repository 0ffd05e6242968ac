#include "snowflake/client/replica_url.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace snowflake::client {

namespace {

bool is_port(std::string_view s) {
  if (s.empty() || s.size() > 5 ||
      !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  const int port = std::stoi(std::string(s));
  return port >= 1 && port <= 65535;
}

}  // namespace

Result<ReplicaUrl, std::string> parse_replica_url(std::string_view text) {
  constexpr std::string_view kPlain = "http://";
  constexpr std::string_view kTls = "https://";
  const auto wrong = [&](std::string_view why) {
    return fmt::format("\"{}\": {} (expected http://host[:port] or https://host[:port])", text,
                       why);
  };
  const bool tls = text.starts_with(kTls);
  if (!tls && !text.starts_with(kPlain)) return wrong("not an http:// or https:// URL");
  std::string_view rest = text.substr(tls ? kTls.size() : kPlain.size());
  if (rest.ends_with('/')) rest.remove_suffix(1);  // "http://host:8080/" is common
  if (rest.find_first_of("/?#@") != std::string_view::npos) {
    return wrong("no path, query or user part: the client adds /id/<tag>");
  }
  ReplicaUrl url{std::string(text), {}, tls ? "443" : "80", tls};
  std::string_view port;
  if (rest.starts_with('[')) {
    const auto close = rest.find(']');
    if (close == std::string_view::npos) return wrong("an IPv6 address needs its closing ]");
    url.host = std::string(rest.substr(1, close - 1));
    const std::string_view after = rest.substr(close + 1);
    if (!after.empty() && !after.starts_with(':')) return wrong("only :port may follow ]");
    if (!after.empty()) port = after.substr(1);
    if (after == ":") return wrong("the port is empty");
  } else {
    const auto colon = rest.find(':');
    url.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = rest.substr(colon + 1);
      if (port.empty()) return wrong("the port is empty");
    }
  }
  if (url.host.empty()) return wrong("no host");
  if (!port.empty()) {
    if (!is_port(port)) return wrong("the port must be 1 to 65535");
    url.port = std::string(port);
  }
  return url;
}

Result<std::vector<ReplicaUrl>, std::string> parse_replica_list(std::string_view text) {
  std::vector<ReplicaUrl> out;
  while (true) {
    const auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    while (item.starts_with(' ')) item.remove_prefix(1);
    while (item.ends_with(' ')) item.remove_suffix(1);
    auto url = parse_replica_url(item);
    if (!url) return url.error();
    out.push_back(std::move(url).value());
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace snowflake::client
