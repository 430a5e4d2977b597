// Fuzz target: the TURN-DTLS listener (src/worker/dtls_listener.h, src/net/dtls_session.h) fed
// datagrams from a few client addresses, as an attacker that cannot see the answers would send
// them. The input is a sequence of [source (1 byte)][length (2 bytes)][datagram].
//
// Invariants: nothing crashes; no session is ever created (completing the cookie exchange needs
// the HMAC of the address under a secret the input cannot know); and no answer is bigger than a
// HelloVerifyRequest, so the listener cannot be used to amplify spoofed traffic.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "config/self_signed_cert.h"
#include "fuzz_check.h"
#include "worker/dtls_listener.h"

namespace {

using namespace kturn;

// RFC 6347 §4.2.1: a HelloVerifyRequest record is 13 + 12 + 3 + cookie (at most 255) bytes.
constexpr size_t kMaxAnswer = 13 + 12 + 3 + 255;

worker::DtlsListener& listener() {
  static std::unique_ptr<worker::DtlsListener> instance = [] {
    auto pem = config::generateSelfSignedCert();
    FUZZ_CHECK(pem);
    auto context = net::TlsContext::server(pem->cert_pem, pem->key_pem, net::TlsKind::kDtls);
    FUZZ_CHECK(context);
    worker::DtlsListener::Callbacks callbacks;
    callbacks.on_closed = [](const FiveTuple&) {};
    callbacks.has_allocation = [](const FiveTuple&) { return false; };
    return std::make_unique<worker::DtlsListener>(*context, worker::DtlsListener::Limits{},
                                                  callbacks);
  }();
  return *instance;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  worker::DtlsListener& l = listener();
  const auto server = *TransportAddress::parse("127.0.0.1:5349");
  std::vector<uint8_t> buffer;
  size_t at = 0;
  while (at + 3 <= size) {
    const uint8_t source = data[at];
    const size_t length =
        std::min<size_t>((size_t{data[at + 1]} << 8) | data[at + 2], size - at - 3);
    buffer.assign(data + at + 3, data + at + 3 + length);
    at += 3 + length;
    const FiveTuple tuple{TransportProtocol::kUdp,
                          TransportAddress{IpAddress::v4(uint32_t{0x7f000001} + (source & 3)),
                                           static_cast<uint16_t>(40000 + (source >> 2))},
                          server};
    const size_t plain = l.receive(tuple, buffer, buffer.size(), std::chrono::steady_clock::now());
    FUZZ_CHECK(plain == 0);  // no session, so no application data
    l.forEachOutput([](const FiveTuple&, std::span<const uint8_t> datagram) {
      FUZZ_CHECK(datagram.size() <= kMaxAnswer);
    });
    l.clearOutput();
  }
  FUZZ_CHECK(l.sessionCount() == 0);
  FUZZ_CHECK(l.stats().accepted == 0);
  return 0;
}
