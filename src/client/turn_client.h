// TurnClient: one TURN allocation held by a client (RFC 8656), over a ServerLink: kturnctl's
// turncat tunnel and icetest run on it.
//
// Requests are transactions that block until their answer (RFC 8489 §6.2: retransmitted from a
// 500 ms RTO, doubling, on UDP and DTLS; sent once on TCP and TLS), with the long-term
// credential mechanism done here: the first request learns REALM and NONCE from the server's
// 401, a 438 (stale nonce) is retried with the new nonce, and answers carrying MESSAGE-INTEGRITY
// are checked against the key. Whatever arrives during a transaction that is not its answer
// (Data indications, ChannelData) goes to the data handler, so no relayed packet is lost while
// a refresh is in flight.
//
// The peer-facing side: send() uses the channel bound to the peer if there is one (4 bytes of
// overhead), else a Send indication (36 bytes for IPv4); received data of both kinds reach the
// handler with the peer's address. Sending and receiving do not allocate.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "client/server_link.h"
#include "kturn/result.h"
#include "kturn/transport_address.h"
#include "stun/integrity.h"
#include "stun/message.h"
#include "stun/message_builder.h"

namespace kturn::client {

struct TurnClientOptions {
  std::string username{};
  std::string password{};
  uint32_t lifetime = 600;  // requested allocation lifetime, seconds (RFC 8656 §7.2: 600)
  std::optional<AddressFamily> relay_family{};  // REQUESTED-ADDRESS-FAMILY; empty: the server's
  int transaction_timeout_ms = 5000;
};

struct AllocationInfo {
  TransportAddress relayed{};
  TransportAddress mapped{};  // the client's address as the server saw it
  uint32_t lifetime = 0;
};

class TurnClient {
 public:
  using Clock = std::chrono::steady_clock;
  using DataHandler =
      std::function<void(const TransportAddress& peer, std::span<const uint8_t> data)>;

  // A STUN error the server answered with, kept for callers that act on the code.
  struct Refusal {
    int code = 0;  // 401, 403, 437, 441, 486, 508, ...
    std::string reason{};
  };

  TurnClient(std::unique_ptr<ServerLink> link, TurnClientOptions options);
  ~TurnClient();
  TurnClient(const TurnClient&) = delete;
  TurnClient& operator=(const TurnClient&) = delete;

  void setDataHandler(DataHandler handler) { on_data_ = std::move(handler); }

  Result<AllocationInfo> allocate();
  Result<void> createPermission(const IpAddress& peer);
  // Binds the next free channel number to `peer` (and so installs its permission).
  Result<uint16_t> bindChannel(const TransportAddress& peer);
  // Refresh with `lifetime` seconds; 0 releases the allocation.
  Result<void> refresh(uint32_t lifetime);
  // Releases the allocation if one is held (Refresh, lifetime 0), ignoring the answer's fate.
  void release();

  Result<void> send(const TransportAddress& peer, std::span<const uint8_t> data);

  // Reads what the server sent, handing data to the handler; call when fd() is readable or
  // hasBuffered().
  Result<void> receive();
  // Refreshes what is due at `now`: the allocation at half its lifetime, permissions after 240 s
  // of their 300 (RFC 8656 §9), channels after 540 s of their 600 (§12). What it refreshes is
  // dated `now`.
  Result<void> maintain(Clock::time_point now);
  // When maintain() next has something to do.
  Clock::time_point nextMaintenance() const;

  int fd() const { return link_->fd(); }
  bool hasBuffered() const { return link_->hasBuffered(); }
  const ServerLink& link() const { return *link_; }
  const std::optional<AllocationInfo>& allocation() const { return allocation_; }
  // The error code of the last refused request, if the last request was refused.
  const std::optional<Refusal>& lastRefusal() const { return last_refusal_; }

 private:
  struct Channel {
    uint16_t number = 0;
    TransportAddress peer{};
    Clock::time_point refreshed{};
  };
  struct Permission {
    IpAddress peer{};
    Clock::time_point refreshed{};
  };
  using Build = std::function<void(stun::MessageBuilder&)>;

  // Sends the request `build` writes, with credentials once known; retries once on 401/438.
  Result<stun::MessageView> transact(stun::Method method, const Build& build);
  Result<stun::MessageView> transactOnce(stun::Method method, const Build& build);
  void dispatch(std::span<const uint8_t> message);
  Error refused(stun::Method method, const stun::MessageView& answer);

  std::unique_ptr<ServerLink> link_;
  TurnClientOptions options_;
  DataHandler on_data_;

  std::string realm_;
  std::string nonce_;
  stun::IntegrityKey key_{};
  bool have_key_ = false;

  // One transaction at a time: its ID, and its answer copied out of the link's buffer.
  stun::TransactionId pending_{};
  bool waiting_ = false;
  std::vector<uint8_t> answer_;
  bool answered_ = false;

  std::optional<AllocationInfo> allocation_;
  Clock::time_point allocation_refreshed_{};
  std::vector<Permission> permissions_;
  std::vector<Channel> channels_;
  uint16_t next_channel_ = 0x4000;
  std::optional<Refusal> last_refusal_;

  std::vector<uint8_t> request_;    // the request in flight, kept for retransmission
  std::unique_ptr<uint8_t[]> out_;  // Send indications and ChannelData are built here
  uint64_t indications_ = 0;        // numbers the Send indications' transaction IDs
};

}  // namespace kturn::client
