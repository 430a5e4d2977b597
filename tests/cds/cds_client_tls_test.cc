// CdsClient::get() over https against a throwaway TLS server: certificate verification on by
// default, off with tls_insecure_skip_verify.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/ssl.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <thread>

#include "cds/cds_client.h"
#include "cds/test_support.h"  // tests/cds
#include "config/self_signed_cert.h"
#include "config/serializer.h"

namespace kturn::cds {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

// Answers every request on every connection with `body`, over TLS, until destroyed.
class TlsHttpServer {
 public:
  explicit TlsHttpServer(std::string body)
      : body_(std::move(body)),
        ctx_(asio::ssl::context::tls_server),
        acceptor_(ioc_, {asio::ip::make_address("127.0.0.1"), 0}) {
    auto pem = config::generateSelfSignedCert();
    EXPECT_TRUE(pem);
    ctx_.use_certificate_chain(asio::buffer(pem->cert_pem));
    ctx_.use_private_key(asio::buffer(pem->key_pem), asio::ssl::context::pem);
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { serve(); });
  }
  ~TlsHttpServer() {
    done_ = true;
    boost::system::error_code ignored;
    asio::ip::tcp::socket poke(ioc_);  // wakes the blocking accept()
    poke.connect({asio::ip::make_address("127.0.0.1"), port_}, ignored);
    poke.close(ignored);
    thread_.join();
  }
  uint16_t port() const { return port_; }

 private:
  void serve() {
    while (!done_) {
      boost::system::error_code ec;
      beast::ssl_stream<asio::ip::tcp::socket> stream(ioc_, ctx_);
      acceptor_.accept(stream.next_layer(), ec);
      if (ec || done_) return;
      stream.handshake(asio::ssl::stream_base::server, ec);
      if (ec) continue;  // the client refused our certificate
      beast::flat_buffer buffer;
      http::request<http::string_body> request;
      http::read(stream, buffer, request, ec);
      if (ec) continue;
      http::response<http::string_body> response{http::status::ok, 11};
      response.set(http::field::content_type, "application/json");
      response.body() = body_;
      response.keep_alive(false);
      response.prepare_payload();
      http::write(stream, response, ec);
      stream.shutdown(ec);
    }
  }

  std::string body_;
  asio::io_context ioc_;
  asio::ssl::context ctx_;
  asio::ip::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

TEST(CdsClientTlsTest, HttpsGetVerifiesTheServer) {
  const auto config = testing::makeConfig("stunner/gw");
  TlsHttpServer server(config::toJson(config));
  const std::string origin = "https://127.0.0.1:" + std::to_string(server.port());

  auto verified = CdsClient::create(
      {.origin = origin, .id = "stunner/gw", .request_timeout = std::chrono::milliseconds(2000)});
  ASSERT_TRUE(verified);
  auto refused = (*verified)->get();
  ASSERT_FALSE(refused);  // self-signed: not in the system trust store
  EXPECT_EQ(refused.error().code, Error::Code::kIo);

  auto insecure = CdsClient::create({.origin = origin,
                                     .id = "stunner/gw",
                                     .request_timeout = std::chrono::milliseconds(2000),
                                     .tls_insecure_skip_verify = true});
  ASSERT_TRUE(insecure);
  auto got = (*insecure)->get();
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*got, config);
}

TEST(CdsClientTlsTest, MissingCaFileIsAnError) {
  auto client = CdsClient::create(
      {.origin = "https://127.0.0.1:1", .id = "a/b", .tls_ca_file = "/nonexistent/ca.pem"});
  ASSERT_TRUE(client);
  auto got = (*client)->get();
  ASSERT_FALSE(got);
  EXPECT_NE(got.error().message.find("/nonexistent/ca.pem"), std::string::npos);
}

}  // namespace
}  // namespace kturn::cds
