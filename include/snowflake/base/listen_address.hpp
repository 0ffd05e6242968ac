#pragma once
// An address to listen on, as the config and --listen spell it. A pure
// parser below the config and the HTTP server, which both take it.

#include <boost/asio/ip/tcp.hpp>

#include <optional>
#include <string_view>

namespace snowflake {

// What parse_listen_address accepts, for error messages.
inline constexpr std::string_view kListenAddressForm =
    "IPv4:port or [IPv6]:port, such as 127.0.0.1:8080 or [::1]:8080";

// "127.0.0.1:8080", "0.0.0.0:8080", "[::1]:8080", "[::]:8080". Port 0 asks
// the system for a free port (the daemon logs the one it got).
std::optional<boost::asio::ip::tcp::endpoint> parse_listen_address(std::string_view text);

}  // namespace snowflake
