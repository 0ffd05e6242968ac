#pragma once
// Makes a znode read-only for everyone, or open again: a fault a test can
// inject where the daemon's reads of a node succeed and its writes fail
// (NOAUTH), as they would on an ensemble whose ACLs an operator changed.

#include <string>

namespace snowflake::test {

// True once `path`'s ACL is world:anyone read and admin (`writable` false)
// or world:anyone all (`writable` true).
bool set_node_writable(const std::string& hosts, const std::string& path, bool writable);

}  // namespace snowflake::test
