#include "id_load.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <memory>

#include "http_client.hpp"

namespace snowflake::test {

IdLoad::IdLoad(unsigned short port, unsigned batch, std::string tag, std::string route)
    : port_(port), batch_(batch), tag_(std::move(tag)), route_(std::move(route)) {
  thread_ = std::thread([this] { run(); });
}

IdLoad::~IdLoad() { stop(); }

void IdLoad::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

void IdLoad::run() {
  const std::string target = route_ + tag_ + "?count=" + std::to_string(batch_);
  std::unique_ptr<HttpConnection> connection;
  while (!stopping_) {
    std::optional<HttpReply> reply;
    const auto asked = std::chrono::steady_clock::now();
    try {
      if (!connection)
        connection = std::make_unique<HttpConnection>(port_, "127.0.0.1", std::chrono::seconds(5));
      reply = connection->request(target);
    } catch (const std::exception&) {
      reply.reset();
    }
    if (!reply) {
      ++refusals_["no_answer"];
      connection.reset();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // pacing a reconnect
      continue;
    }
    const auto body = nlohmann::json::parse(reply->body, nullptr, false);
    if (reply->status == 200 && body.contains("ids")) {
      batches_.push_back({asked, ids_.size()});
      for (const auto& id : body["ids"]) {
        ids_.push_back(std::stoull(id.get<std::string>()));
        highest_ = std::max(highest_.load(), ids_.back());
      }
      issued_ = ids_.size();
    } else {
      ++refusals_[body.is_object() ? body.value("error", "unknown") : "unknown"];
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // pacing the retries
    }
    if (!reply->keep_alive) connection.reset();
  }
}

std::size_t IdLoad::first_asked_at_or_after(std::chrono::steady_clock::time_point t) const {
  const auto batch =
      std::find_if(batches_.begin(), batches_.end(), [t](const Batch& b) { return b.asked >= t; });
  return batch == batches_.end() ? ids_.size() : batch->first;
}

std::size_t duplicates(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) {
  std::vector<std::uint64_t> all(a);
  all.insert(all.end(), b.begin(), b.end());
  std::sort(all.begin(), all.end());
  std::size_t repeated = 0;
  for (std::size_t i = 1; i < all.size(); ++i) repeated += all[i] == all[i - 1];
  return repeated;
}

}  // namespace snowflake::test
