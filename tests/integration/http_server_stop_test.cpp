// HttpServer's stop against its own timers, on a real loopback socket.

#include <catch2/catch.hpp>

#include <boost/asio/post.hpp>

#include <future>
#include <thread>

#include "snowflake/http/server.hpp"

using namespace snowflake::http;
using namespace std::chrono_literals;

TEST_CASE("HttpServer::run returns after stop() even when a deadline sweep completed first",
          "[http]") {
  // The sweep timer (a quarter of the shortest timeout: 10 ms here) fires
  // while the main loop is busy in a handler (as a /seq request waiting for
  // a range is); stop()'s cancel() then cannot stop its completion, which
  // must not arm the timer again: run() would never return (a SIGTERM that
  // never ended the daemon).
  ServerSettings settings;
  settings.endpoint = {boost::asio::ip::make_address("127.0.0.1"), 0};
  settings.request_timeout = 40ms;
  settings.idle_timeout = 40ms;
  settings.drain_timeout = 200ms;
  HttpServer server(settings, Handlers{[](const Request&) { return text_response(Status::ok, ""); },
                                       [](Status s, std::string_view, std::string_view) {
                                         return text_response(s, "");
                                       }});
  REQUIRE(server.listen());
  auto ran = std::async(std::launch::async, [&server] { server.run(); });
  // Runs after run()'s start (which arms the sweep): the loop is up.
  std::promise<void> up;
  boost::asio::post(server.main_context(), [&up] { up.set_value(); });
  REQUIRE(up.get_future().wait_for(10s) == std::future_status::ready);
  boost::asio::post(server.main_context(), [&server] {
    std::this_thread::sleep_for(50ms);  // the sweep's wait completes meanwhile
    server.stop();
  });
  const bool returned = ran.wait_for(20s) == std::future_status::ready;
  if (!returned) {
    // Unstick it so that the test ends (and fails) instead of hanging.
    server.main_context().stop();
  }
  CHECK(returned);
}
