#include "session_expiry.hpp"

#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <cstring>

#include "polling.hpp"

namespace snowflake::test {

bool expire_session(const std::string& hosts, const coord::ZkSession& session) {
  const auto [id, password] = session.client_id();
  clientid_t cid{};
  cid.client_id = id;
  std::memcpy(cid.passwd, password.data(), std::min(password.size(), sizeof cid.passwd));
  for (int attempt = 0; attempt < 3; ++attempt) {
    zhandle_t* twin = zookeeper_init(hosts.c_str(), nullptr, 1000, &cid, nullptr, 0);
    if (!twin) return false;
    const bool up = eventually([&] { return zoo_state(twin) == ZOO_CONNECTED_STATE; });
    zookeeper_close(twin);
    if (!up) return false;
    if (eventually([&] { return session.gone(); }, std::chrono::seconds(5))) return true;
  }
  return false;
}

}  // namespace snowflake::test
