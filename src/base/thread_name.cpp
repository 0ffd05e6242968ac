#include "snowflake/base/thread_name.hpp"

#include <pthread.h>

namespace snowflake {

void name_this_thread(const std::string& name) noexcept {
  // Longer names are refused (ERANGE), not cut: cut them here. A name is a
  // convenience; failing to set it changes nothing else.
  (void)pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace snowflake
