#include "node_acl.hpp"

#include <zookeeper/zookeeper.h>

#include "polling.hpp"

namespace snowflake::test {

bool set_node_writable(const std::string& hosts, const std::string& path, bool writable) {
  zhandle_t* zh = zookeeper_init(hosts.c_str(), nullptr, 4000, nullptr, nullptr, 0);
  if (!zh) return false;
  bool set = eventually([&] { return zoo_state(zh) == ZOO_CONNECTED_STATE; });
  if (set) {
    // Read-only keeps ADMIN, or nobody could open it again.
    ACL read_only{ZOO_PERM_READ | ZOO_PERM_ADMIN, ZOO_ANYONE_ID_UNSAFE};
    ACL_vector read_only_acl{1, &read_only};
    set =
        zoo_set_acl(zh, path.c_str(), -1, writable ? &ZOO_OPEN_ACL_UNSAFE : &read_only_acl) == ZOK;
  }
  zookeeper_close(zh);
  return set;
}

}  // namespace snowflake::test
