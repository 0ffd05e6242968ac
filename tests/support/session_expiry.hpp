#pragma once
// Ends a ZooKeeper session from the server's side, as an expiry does: a
// second handle opened on the same session id and password, then closed.
// The session's own handle sees it gone (ZkSession::gone()).

#include <string>

#include "snowflake/zk/zk_session.hpp"

namespace snowflake::test {

// True once `session` is gone; tries a few times (our own handle may take
// the session back before the twin's close ends it).
bool expire_session(const std::string& hosts, const coord::ZkSession& session);

}  // namespace snowflake::test
