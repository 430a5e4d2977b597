// One simulated TURN client: its socket, credentials and the one transaction it has in flight.
// The client group drives it; this file only builds requests and reads responses, so the
// state machine stays in one place (client_group.cc).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "kturn/transport_address.h"
#include "stun/integrity.h"
#include "stun/message.h"

namespace kturn::bench {

// Where a client is in its life. Steps from kAllocateProbe to kRelease have a request in flight.
enum class Step : uint8_t {
  kIdle,
  kAllocateProbe,  // Allocate without credentials, to learn REALM and NONCE (401)
  kAllocate,
  kPermission,
  kChannelBind,
  kRefresh,  // Refresh(lifetime), then permission and channel again
  kRelease,  // Refresh(0)
  kReady,
  kReleased,
  kFailed,
};

inline bool inFlight(Step s) { return s >= Step::kAllocateProbe && s <= Step::kRelease; }

struct TurnClient {
  int fd = -1;
  uint32_t index = 0;  // global client number, carried in every stamp
  uint16_t channel = 0x4000;
  Step step = Step::kIdle;
  bool active = false;      // sends traffic
  bool allocated = false;   // the server holds an allocation for it
  bool listed = false;      // in the group's in-flight list
  bool backlogged = false;  // TURN-TCP/TLS: output queued that the socket has not taken yet
  uint8_t tries = 0;        // transmissions of the current request
  uint8_t auth_retries = 0;
  int last_error = 0;
  stun::TransactionId txid{};
  int64_t sent_ns = 0;     // last transmission
  int64_t rto_ns = 0;      // wait before the next retransmission
  int64_t refresh_ns = 0;  // when the allocation wants a Refresh
  uint64_t seq = 0;

  std::string username;
  std::string password;
  std::string realm;
  std::string nonce;
  stun::IntegrityKey key;
  bool have_key = false;

  uint16_t request_size = 0;
  std::array<uint8_t, 320> request{};
  // Send indications: the STUN header, XOR-PEER-ADDRESS and DATA header before the payload.
  uint8_t send_head_size = 0;
  std::array<uint8_t, 40> send_head{};
};

struct RequestParams {
  TransportAddress peer;
  uint32_t lifetime = 600;
};

// Writes the request for `c.step` (with a fresh transaction ID) into c.request.
bool buildRequest(TurnClient& c, const RequestParams& params, uint64_t& txid_counter);

// Precomputes c.send_head for Send indications carrying `payload` bytes to `peer`.
void buildSendHead(TurnClient& c, const TransportAddress& peer, size_t payload);

// What a response to the client's transaction says.
struct ResponseInfo {
  bool success = false;
  int error = 0;
  std::optional<std::string> realm;
  std::optional<std::string> nonce;
  std::optional<TransportAddress> relayed;
};
ResponseInfo readResponse(const stun::MessageView& m);

}  // namespace kturn::bench
