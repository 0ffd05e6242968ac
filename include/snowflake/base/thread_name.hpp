#pragma once
// Names the calling thread (at most 15 characters: the kernel's limit), so
// that `top -H`, `ps -L`, gdb and /proc/<pid>/task/*/comm tell the daemon's
// threads apart: "http-<n>" (an HTTP event loop but the main thread's),
// "heartbeat", "persist" (the time reservation) and "signals".

#include <string>

namespace snowflake {

void name_this_thread(const std::string& name) noexcept;

}  // namespace snowflake
