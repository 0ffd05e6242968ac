#include "snowflake/base/listen_address.hpp"

#include <boost/asio/ip/address.hpp>

#include <charconv>
#include <string>

namespace snowflake {

std::optional<boost::asio::ip::tcp::endpoint> parse_listen_address(std::string_view text) {
  std::string_view host, port;
  if (text.starts_with('[')) {  // [IPv6]:port
    const auto close = text.find("]:");
    if (close == std::string_view::npos) return std::nullopt;
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {  // IPv4:port
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return std::nullopt;  // IPv6 needs brackets
  }
  unsigned short port_number = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), port_number);
  if (port.empty() || ec != std::errc{} || end != port.data() + port.size()) return std::nullopt;
  boost::system::error_code bad;
  const auto address = boost::asio::ip::make_address(std::string(host), bad);
  if (bad) return std::nullopt;
  if (text.starts_with('[') != address.is_v6()) return std::nullopt;
  return boost::asio::ip::tcp::endpoint(address, port_number);
}

}  // namespace snowflake
