#include "worker/dtls_listener.h"

#include <array>
#include <cstring>

#include "worker/connection_sweep.h"

namespace kturn::worker {
namespace {

// RFC 6347 §4.1: the content type of a handshake record, the first byte of a ClientHello datagram.
constexpr uint8_t kHandshakeRecord = 22;
constexpr uint8_t kClientHello = 1;  // handshake message type (RFC 6347 §4.2.2)
constexpr size_t kRecordHeader = 13;

// A datagram that starts a handshake: a handshake record of epoch 0 (nothing encrypted yet)
// holding a ClientHello.
bool isInitialClientHello(std::span<const uint8_t> datagram) {
  return datagram.size() > kRecordHeader && datagram[0] == kHandshakeRecord && datagram[3] == 0 &&
         datagram[4] == 0 && datagram[kRecordHeader] == kClientHello;
}

}  // namespace

DtlsListener::DtlsListener(net::TlsContextPtr context, const Limits& limits, Callbacks callbacks)
    : context_(std::move(context)), limits_(limits), callbacks_(std::move(callbacks)) {}

DtlsListener::~DtlsListener() {
  while (!sessions_.empty()) close(sessions_.begin()->first);
}

size_t DtlsListener::receive(const FiveTuple& tuple, std::span<uint8_t> buffer, size_t length,
                             turn::MonoTime now) {
  more_ = nullptr;
  const auto it = sessions_.find(tuple.client);
  if (it == sessions_.end()) {
    onNewClient(tuple, buffer.first(length), false);
    return 0;
  }
  Session& s = *it->second;
  if (s.dtls->established() && isInitialClientHello(buffer.first(length)) &&
      !s.dtls->sameClientRandom(buffer.first(length))) {
    onNewClient(tuple, buffer.first(length), true);
    return 0;
  }
  s.last_active = now;
  s.dtls->feed(buffer.first(length));  // copied: `buffer` is free to take the plaintext
  return readRecord(s, buffer);
}

size_t DtlsListener::next(std::span<uint8_t> buffer) {
  Session* s = more_;
  more_ = nullptr;
  return s == nullptr ? 0 : readRecord(*s, buffer);
}

size_t DtlsListener::readRecord(Session& s, std::span<uint8_t> buffer) {
  const FiveTuple tuple = s.tuple;  // close() destroys s
  const TransportAddress& client = tuple.client;
  for (;;) {
    const size_t queued = output_.ends.size();
    const net::DtlsSession::ReadResult r = s.dtls->read(buffer);
    attribute(tuple, queued);
    switch (r.status) {
      case net::DtlsSession::Status::kData:
        if (r.bytes == 0) continue;
        more_ = s.dtls->hasPending() ? &s : nullptr;
        return r.bytes;
      case net::DtlsSession::Status::kWouldBlock:
        return 0;
      case net::DtlsSession::Status::kFailed:
        ++stats_.failures;
        close(client);
        return 0;
      case net::DtlsSession::Status::kClosed:
        close(client);
        return 0;
    }
  }
}

void DtlsListener::onNewClient(const FiveTuple& tuple, std::span<const uint8_t> datagram,
                               bool replacing) {
  if (datagram.empty() || datagram[0] != kHandshakeRecord) {
    ++stats_.dropped;  // application data or an alert of a session that is gone
    return;
  }
  if (!replacing && sessions_.size() >= limits_.max_sessions) {
    ++stats_.refused;
    return;
  }
  if (!listening_) listening_ = std::make_unique<net::DtlsSession>(*context_, output_);
  // The cookie binds the client's address: IP bytes, then the port.
  std::array<uint8_t, 18> address{};
  const auto ip = tuple.client.ip.bytes();
  std::memcpy(address.data(), ip.data(), ip.size());
  address[ip.size()] = static_cast<uint8_t>(tuple.client.port >> 8);
  address[ip.size() + 1] = static_cast<uint8_t>(tuple.client.port);
  const size_t queued = output_.ends.size();
  const auto result = listening_->listen(datagram, std::span(address).first(ip.size() + 2));
  attribute(tuple, queued);
  switch (result) {
    case net::DtlsSession::ListenResult::kChallenged:
      ++stats_.challenged;
      return;
    case net::DtlsSession::ListenResult::kIgnored:
      ++stats_.dropped;
      listening_.reset();  // a fatal listen error leaves the SSL unusable
      return;
    case net::DtlsSession::ListenResult::kVerified:
      break;
  }
  if (replacing) {
    // The cookie came back: the client is at this address and starting over. Its old session,
    // and with it the allocation, is of no use to it any more.
    ++stats_.replaced;
    close(tuple.client);
  }
  auto s = std::make_unique<Session>();
  s->dtls = std::move(listening_);
  s->tuple = tuple;
  s->started = s->last_active = std::chrono::steady_clock::now();
  const size_t before = output_.ends.size();
  const bool going = s->dtls->accept();
  attribute(tuple, before);
  if (!going) {
    ++stats_.failures;
    return;
  }
  ++stats_.accepted;
  sessions_[tuple.client] = std::move(s);
}

bool DtlsListener::send(const TransportAddress& client, std::span<const uint8_t> message) {
  const auto it = sessions_.find(client);
  if (it == sessions_.end() || full()) return false;
  const size_t queued = output_.ends.size();
  const bool sent = it->second->dtls->write(message);
  attribute(it->second->tuple, queued);
  return sent;
}

void DtlsListener::attribute(const FiveTuple& tuple, size_t first) {
  for (size_t i = first; i < output_.ends.size(); ++i) destinations_.push_back(tuple);
}

void DtlsListener::clearOutput() {
  output_.clear();
  destinations_.clear();
}

void DtlsListener::sweep(turn::MonoTime now) {
  const auto verdict = [&](Session& s) {
    if (!s.dtls->established()) {
      if (now - s.started >= limits_.handshake_timeout) return SweepVerdict::kHandshakeTimedOut;
      const size_t queued = output_.ends.size();
      s.dtls->onTimer();  // retransmits the last flight when its timer has run out
      attribute(s.tuple, queued);
      return SweepVerdict::kKeep;
    }
    return now - s.last_active >= limits_.idle_timeout && !callbacks_.has_allocation(s.tuple)
               ? SweepVerdict::kIdle
               : SweepVerdict::kKeep;
  };
  sweepConnections(sessions_, stats_, verdict,
                   [this](const TransportAddress& client) { close(client); });
}

void DtlsListener::setTlsContext(net::TlsContextPtr context) {
  if (context == context_) return;
  context_ = std::move(context);
  listening_.reset();  // the next client is challenged and served with the new certificate
}

void DtlsListener::close(const TransportAddress& client) {
  const auto it = sessions_.find(client);
  if (it == sessions_.end()) return;
  std::unique_ptr<Session> s = std::move(it->second);
  sessions_.erase(it);
  if (more_ == s.get()) more_ = nullptr;
  callbacks_.on_closed(s->tuple);
}

}  // namespace kturn::worker
