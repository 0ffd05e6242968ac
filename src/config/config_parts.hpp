#pragma once
// Sections of the config read outside config.cpp (internal to config
// parsing, like json_section.hpp): the secret files, and the forms.

#include <string>
#include <string_view>

#include "json_section.hpp"
#include "snowflake/config/config.hpp"

namespace snowflake {

// Where a configured secret file is: a relative name is a systemd
// credential's when the daemon runs with some (LoadCredential=).
std::string secret_path(const std::string& configured, const std::string& credentials_directory);
// The first line of a secret file, white space trimmed at both ends; an
// error names `key` of `section` (cannot open, a first line over 4096 bytes).
// What the file holds is never part of an error.
std::string read_secret_line(const JsonSection& section, std::string_view key,
                             const std::string& path);

// http.admin_listen and http.admin_token_file, into `h` (its listen read).
void read_admin(JsonSection& http, HttpSettings& h, const std::string& credentials_directory);

// http.tls_cert_file, tls_key_file, admin_client_ca_file and
// tls_reload_interval_ms, into `h` (its admin_listen read): the files read
// and checked.
void read_tls(JsonSection& http, HttpSettings& h, const std::string& credentials_directory);

// The forms section: the opaque key, the default form and each tag's.
FormSettings read_forms(JsonSection forms, const IdLayout& layout,
                        const std::string& credentials_directory);

}  // namespace snowflake
