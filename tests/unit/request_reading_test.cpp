// Reading requests as the server does: bytes fed to the parser as they
// arrive, a byte at a time if need be.

#include <catch2/catch.hpp>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

#include "snowflake/http/request_reading.hpp"

using namespace snowflake::http;
namespace beast = boost::beast;

namespace {

struct Reader {
  Reader() { apply_limits(parser, limits); }

  // Appends bytes one at a time, as long as the parser asks for more; its
  // last answer (fed counts the bytes it took).
  beast::error_code feed_bytewise(std::string_view bytes) {
    beast::error_code ec = beast::http::error::need_more;
    for (fed = 0; fed < bytes.size() && ec == beast::http::error::need_more; ++fed) {
      buffer.commit(
          boost::asio::buffer_copy(buffer.prepare(1), boost::asio::buffer(&bytes[fed], 1)));
      ec = parse_buffered(parser, buffer);
    }
    return ec;
  }
  std::size_t fed = 0;

  RequestLimits limits;
  RequestParser parser;
  beast::flat_buffer buffer;
};

}  // namespace

TEST_CASE("a request fed a byte at a time is whole at its last byte, not before", "[http]") {
  Reader r;
  CHECK_FALSE(r.feed_bytewise("GET /id/x HTTP/1.1\r\nHost: a\r\n\r\n"));
  CHECK(r.parser.is_done());
  CHECK(r.parser.get().target() == "/id/x");
  CHECK(r.buffer.size() == 0);
}

TEST_CASE("pipelined bytes of the next request stay buffered", "[http]") {
  Reader r;
  const std::string_view two = "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n";
  r.buffer.commit(boost::asio::buffer_copy(r.buffer.prepare(two.size()), boost::asio::buffer(two)));
  CHECK_FALSE(parse_buffered(r.parser, r.buffer));
  CHECK(r.parser.get().target() == "/a");
  Reader next;
  std::swap(next.buffer, r.buffer);
  CHECK_FALSE(parse_buffered(next.parser, next.buffer));
  CHECK(next.parser.get().target() == "/b");
}

TEST_CASE("chunked bodies fed a byte at a time are refused, never an abort", "[http]") {
  // The libFuzzer target http_stream tripped Boost 1.74's wrong assertion
  // in the chunk parser with the first of these (boostorg/beast#2861); built
  // as the daemon is (NDEBUG), the parser goes on and refuses the request.
  Reader bad_trailer;
  const auto ec = bad_trailer.feed_bytewise(
      "GET /id/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nabc\r\n0\r\n\n");
  REQUIRE(ec);
  CHECK(refusal_for_read_error(ec, bad_trailer.limits)->code == "bad_request");

  Reader with_data;
  const auto data = with_data.feed_bytewise(
      "GET /id/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  REQUIRE(data);
  CHECK(refusal_for_read_error(data, with_data.limits)->code == "body_not_allowed");
}

TEST_CASE("the peer closing: silence before a request, bad_request within one", "[http]") {
  Reader idle;
  CHECK_FALSE(refusal_for_read_error(parse_end(idle.parser), idle.limits));
  Reader cut;
  CHECK(cut.feed_bytewise("GET /id/x HTTP/1.1\r\nHo") == beast::http::error::need_more);
  const auto refusal = refusal_for_read_error(parse_end(cut.parser), cut.limits);
  REQUIRE(refusal);
  CHECK(refusal->code == "bad_request");
}

TEST_CASE("headers over the limit, a byte at a time, are refused with 431", "[http]") {
  Reader r;
  const auto ec = r.feed_bytewise("GET / HTTP/1.1\r\nX: " + std::string(9000, 'a'));
  REQUIRE(ec);
  CHECK(refusal_for_read_error(ec, r.limits)->code == "headers_too_large");
  CHECK(r.fed <= r.limits.header_bytes + 1);  // refused at the limit, not at the end
}
