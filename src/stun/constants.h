// STUN (RFC 8489) and TURN (RFC 8656, RFC 6062) wire constants.
#pragma once

#include <cstdint>
#include <string_view>

namespace kturn::stun {

inline constexpr uint32_t kMagicCookie = 0x2112A442;  // RFC 8489 §5
inline constexpr size_t kHeaderSize = 20;
inline constexpr size_t kTransactionIdSize = 12;
inline constexpr uint32_t kFingerprintXor = 0x5354554e;  // RFC 8489 §14.7

// Methods (RFC 8489 §18.2, RFC 8656 §17, RFC 6062 §6.1).
enum class Method : uint16_t {
  kBinding = 0x001,
  kAllocate = 0x003,
  kRefresh = 0x004,
  kSend = 0x006,
  kData = 0x007,
  kCreatePermission = 0x008,
  kChannelBind = 0x009,
  kConnect = 0x00a,
  kConnectionBind = 0x00b,
  kConnectionAttempt = 0x00c,
};

// The method's name as the RFCs spell it, for logs and error messages.
constexpr std::string_view methodName(Method method) {
  switch (method) {
    case Method::kBinding:
      return "Binding";
    case Method::kAllocate:
      return "Allocate";
    case Method::kRefresh:
      return "Refresh";
    case Method::kSend:
      return "Send";
    case Method::kData:
      return "Data";
    case Method::kCreatePermission:
      return "CreatePermission";
    case Method::kChannelBind:
      return "ChannelBind";
    case Method::kConnect:
      return "Connect";
    case Method::kConnectionBind:
      return "ConnectionBind";
    case Method::kConnectionAttempt:
      return "ConnectionAttempt";
  }
  return "unknown method";
}

// The two class bits C1 C0 of the message type (RFC 8489 §5).
enum class MessageClass : uint8_t {
  kRequest = 0b00,
  kIndication = 0b01,
  kSuccessResponse = 0b10,
  kErrorResponse = 0b11,
};

// Attribute types (RFC 8489 §18.3, RFC 8656 §18, RFC 6062 §6.2). 0x0000-0x7FFF are
// comprehension-required, 0x8000-0xFFFF comprehension-optional.
namespace attr {
inline constexpr uint16_t kMappedAddress = 0x0001;
inline constexpr uint16_t kUsername = 0x0006;
inline constexpr uint16_t kMessageIntegrity = 0x0008;
inline constexpr uint16_t kErrorCode = 0x0009;
inline constexpr uint16_t kUnknownAttributes = 0x000A;
inline constexpr uint16_t kChannelNumber = 0x000C;
inline constexpr uint16_t kLifetime = 0x000D;
inline constexpr uint16_t kXorPeerAddress = 0x0012;
inline constexpr uint16_t kData = 0x0013;
inline constexpr uint16_t kRealm = 0x0014;
inline constexpr uint16_t kNonce = 0x0015;
inline constexpr uint16_t kXorRelayedAddress = 0x0016;
inline constexpr uint16_t kRequestedAddressFamily = 0x0017;
inline constexpr uint16_t kEvenPort = 0x0018;
inline constexpr uint16_t kRequestedTransport = 0x0019;
inline constexpr uint16_t kDontFragment = 0x001A;
inline constexpr uint16_t kAccessToken = 0x001B;  // RFC 7635
inline constexpr uint16_t kMessageIntegritySha256 = 0x001C;
inline constexpr uint16_t kPasswordAlgorithm = 0x001D;
inline constexpr uint16_t kUserhash = 0x001E;
inline constexpr uint16_t kXorMappedAddress = 0x0020;
inline constexpr uint16_t kReservationToken = 0x0022;
inline constexpr uint16_t kPriority = 0x0024;      // RFC 8445 (ICE), passes through Binding
inline constexpr uint16_t kUseCandidate = 0x0025;  // RFC 8445
inline constexpr uint16_t kConnectionId = 0x002A;  // RFC 6062
inline constexpr uint16_t kAdditionalAddressFamily = 0x8000;
inline constexpr uint16_t kAddressErrorCode = 0x8001;
inline constexpr uint16_t kPasswordAlgorithms = 0x8002;
inline constexpr uint16_t kAlternateDomain = 0x8003;
inline constexpr uint16_t kIcmp = 0x8004;
inline constexpr uint16_t kSoftware = 0x8022;
inline constexpr uint16_t kAlternateServer = 0x8023;
inline constexpr uint16_t kFingerprint = 0x8028;
inline constexpr uint16_t kIceControlled = 0x8029;            // RFC 8445
inline constexpr uint16_t kIceControlling = 0x802A;           // RFC 8445
inline constexpr uint16_t kThirdPartyAuthorization = 0x802E;  // RFC 7635
inline constexpr uint16_t kMobilityTicket = 0x8030;           // RFC 8016

constexpr bool isComprehensionRequired(uint16_t type) { return type < 0x8000; }
}  // namespace attr

// ERROR-CODE values (RFC 8489 §14.8, RFC 8656 §19, RFC 6062 §6.3).
namespace error {
inline constexpr int kTryAlternate = 300;
inline constexpr int kBadRequest = 400;
inline constexpr int kUnauthorized = 401;
inline constexpr int kForbidden = 403;
inline constexpr int kMobilityForbidden = 405;  // RFC 8016
inline constexpr int kUnknownAttribute = 420;
inline constexpr int kAllocationMismatch = 437;
inline constexpr int kStaleNonce = 438;
inline constexpr int kAddressFamilyNotSupported = 440;
inline constexpr int kWrongCredentials = 441;
inline constexpr int kUnsupportedTransportProtocol = 442;
inline constexpr int kPeerAddressFamilyMismatch = 443;
inline constexpr int kConnectionAlreadyExists = 446;
inline constexpr int kConnectionTimeoutOrFailure = 447;
inline constexpr int kAllocationQuotaReached = 486;
inline constexpr int kServerError = 500;
inline constexpr int kInsufficientCapacity = 508;

// The reason phrases the RFCs suggest.
constexpr std::string_view reasonPhrase(int code) {
  switch (code) {
    case kTryAlternate:
      return "Try Alternate";
    case kBadRequest:
      return "Bad Request";
    case kUnauthorized:
      return "Unauthorized";
    case kForbidden:
      return "Forbidden";
    case kMobilityForbidden:
      return "Mobility Forbidden";
    case kUnknownAttribute:
      return "Unknown Attribute";
    case kAllocationMismatch:
      return "Allocation Mismatch";
    case kStaleNonce:
      return "Stale Nonce";
    case kAddressFamilyNotSupported:
      return "Address Family not Supported";
    case kWrongCredentials:
      return "Wrong Credentials";
    case kUnsupportedTransportProtocol:
      return "Unsupported Transport Protocol";
    case kPeerAddressFamilyMismatch:
      return "Peer Address Family Mismatch";
    case kConnectionAlreadyExists:
      return "Connection Already Exists";
    case kConnectionTimeoutOrFailure:
      return "Connection Timeout or Failure";
    case kAllocationQuotaReached:
      return "Allocation Quota Reached";
    case kServerError:
      return "Server Error";
    case kInsufficientCapacity:
      return "Insufficient Capacity";
    default:
      return "Error";
  }
}
}  // namespace error

// PASSWORD-ALGORITHM values (RFC 8489 §18.5).
enum class PasswordAlgorithm : uint16_t { kMd5 = 0x0001, kSha256 = 0x0002 };

}  // namespace kturn::stun
