#pragma once
// The dense sequences' routes (GET /seq/<tag>, Leaf's GET
// /api/segment/get/<key>) and what /ready and /status say of them. Internal
// to the router: a request costs one atomic step on the tag's buffer while it
// holds numbers; an empty buffer waits a bounded time for the supplier (on
// the event loop: http/answer.hpp), then answers 503 sequence_unavailable,
// never a guess; at once when nothing can come (ZooKeeper away, the tag
// frozen or exhausted).

#include <nlohmann/json.hpp>

#include <string_view>

#include "snowflake/http/router.hpp"

namespace snowflake::http {

Answer issue_sequence(const Request& req, std::string_view tag, std::string_view query,
                      RouterContext& ctx);

// Leaf's segment route: one number, bare, as text.
Answer leaf_segment_get(const Request& req, std::string_view key, RouterContext& ctx);

// {"<tag>": {"ready", "left", "seconds_left", "step", "rate"}, ...}, and
// whether ZooKeeper is connected: for /status and /ready. Null when this
// daemon serves no sequences.
nlohmann::ordered_json sequences_json(const RouterContext& ctx);

// GET /ready?for=seq: 200 while a number can be handed out here, from a
// buffer or a range ZooKeeper is there to give; else 503
// sequence_unavailable, or sequences_disabled on a daemon that serves none.
Response ready_for_sequences(const RouterContext& ctx);

}  // namespace snowflake::http
