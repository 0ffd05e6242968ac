#pragma once
// docs/openapi.yaml, compiled in (CMake writes it into a source file), so
// that GET /openapi.yaml always describes the binary that serves it.

#include <string_view>

namespace snowflake::http {

std::string_view openapi_document() noexcept;

}  // namespace snowflake::http
