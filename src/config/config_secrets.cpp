// Secret files of the config: ZooKeeper's digest identity, the opaque form's
// key, the admin token. Read once at load; their text is never logged, and
// no error quotes it.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <fstream>

#include "config_parts.hpp"
#include "snowflake/base/error_text.hpp"
#include "snowflake/base/listen_address.hpp"
#include "snowflake/base/secret_wipe.hpp"
#include "snowflake/base/sha256.hpp"

namespace snowflake {

namespace {

// A secret is short; a longer first line (a file naming /dev/zero or a log)
// is refused instead of read without end.
constexpr std::size_t kMaxSecretLine = 4096;
// An admin token must not be guessable: `openssl rand -hex 32` makes 64.
constexpr std::size_t kMinAdminToken = 32;

}  // namespace

std::string secret_path(const std::string& configured, const std::string& credentials_directory) {
  if (configured.empty() || configured.front() == '/' || credentials_directory.empty())
    return configured;
  return credentials_directory + "/" + configured;
}

std::string read_secret_line(const JsonSection& section, std::string_view key,
                             const std::string& path) {
  // The stream reads into a buffer of ours, and the line never grows past
  // what was reserved: no copy of the secret is left behind unwiped.
  std::string io_buffer(kMaxSecretLine + 1, '\0');
  const WipedOnExit io_wiped(io_buffer);
  std::ifstream in;
  in.rdbuf()->pubsetbuf(io_buffer.data(), static_cast<std::streamsize>(io_buffer.size()));
  in.open(path);
  if (!in) section.fail(key, fmt::format("cannot open \"{}\": {}", path, error_text(errno)));
  std::string line;
  line.reserve(kMaxSecretLine + 1);
  const WipedOnExit line_wiped(line);
  for (char c; line.size() <= kMaxSecretLine && in.get(c) && c != '\n';) line.push_back(c);
  if (line.size() > kMaxSecretLine) {
    section.fail(key, fmt::format("\"{}\": the first line is over {} bytes", path, kMaxSecretLine));
  }
  std::size_t end = line.size();
  while (end > 0 && std::isspace(static_cast<unsigned char>(line[end - 1]))) --end;
  const auto first = line.find_first_not_of(" \t");
  return first == std::string::npos || first >= end ? std::string()
                                                    : line.substr(first, end - first);
}

void read_admin(JsonSection& http, HttpSettings& h, const std::string& credentials_directory) {
  h.admin_listen = http.string("admin_listen", "");
  if (!h.admin_listen.empty()) {
    const auto admin = parse_listen_address(h.admin_listen);
    if (!admin) {
      http.fail("admin_listen",
                fmt::format("must be {}, got \"{}\"", kListenAddressForm, h.admin_listen));
    }
    if (h.admin_listen == h.listen && admin->port() != 0) {
      http.fail("admin_listen", fmt::format("must differ from http.listen (\"{}\")", h.listen));
    }
  }
  h.admin_token_file = http.string("admin_token_file", "");
  if (h.admin_token_file.empty()) return;
  const std::string path = secret_path(h.admin_token_file, credentials_directory);
  std::string token = read_secret_line(http, "admin_token_file", path);
  const WipedOnExit wiped(token);
  if (token.size() < kMinAdminToken) {
    http.fail("admin_token_file",
              fmt::format("\"{}\" holds a token of {} characters; at least {} (openssl rand -hex "
                          "32 makes one)",
                          path, token.size(), kMinAdminToken));
  }
  h.admin_token_sha256 = sha256(token);
}

}  // namespace snowflake
