#include "turn/request_auth.h"

#include <algorithm>

#include "stun/attributes.h"
#include "turn/access_token.h"
#include "turn/authenticator.h"

namespace kturn::turn {

RequestAuth::Decision RequestAuth::check(const ServerConfig& cfg, const Request& req,
                                         ServerStats& stats) {
  // auth type "none" serves STUN only.
  if (cfg.auth_mode == AuthMode::kNone) return refused(stun::error::kForbidden);
  const stun::MessageView& m = req.message;
  if (!m.has(stun::attr::kMessageIntegrity) && !m.has(stun::attr::kMessageIntegritySha256)) {
    ++stats.auth_missing;
    return challenge(stun::error::kUnauthorized);
  }
  const AuthThrottle::Limits limits{cfg.auth_failures_per_window, cfg.auth_failure_window_seconds};
  if (!throttle_.allows(req.five_tuple.client.ip, req.now.unix_seconds, limits) &&
      !cfg.trusted(req.five_tuple.client.ip)) {
    ++stats.auth_throttled;  // dropped unanswered, before any HMAC work
    return {Decision::Kind::kDropped, 0, {}, false};
  }
  const auto username = m.value(stun::attr::kUsername);
  const auto realm = m.value(stun::attr::kRealm);
  const auto nonce = m.value(stun::attr::kNonce);
  if (!username || !realm || !nonce) return refused(stun::error::kBadRequest);
  const std::string_view user = stun::decodeString(*username);
  auto algorithm = stun::PasswordAlgorithm::kMd5;
  if (const auto pa = m.value(stun::attr::kPasswordAlgorithm)) {
    const auto v = stun::decodePasswordAlgorithm(*pa);
    if (!v || (v->algorithm != 1 && v->algorithm != 2)) return refused(stun::error::kBadRequest);
    algorithm = static_cast<stun::PasswordAlgorithm>(v->algorithm);
  }

  const Allocation* allocation = req.allocation;
  // An OAuth request's USERNAME is a key id; its token carries its own lifetime.
  const bool oauth = m.has(stun::attr::kAccessToken) && !cfg.oauth_keys.empty();
  const bool oauth_allocation = allocation != nullptr && allocation->oauth;
  // An ephemeral credential stops working at its embedded expiry, also for an allocation that it
  // created: existing allocations live until the expiry in their username, as in STUNner.
  if (cfg.auth_mode == AuthMode::kEphemeral && !oauth && !oauth_allocation) {
    const auto expiry = restUsernameExpiry(user);
    if (!expiry || *expiry < req.now.unix_seconds) {
      ++(expiry ? stats.auth_expired : stats.auth_unknown_user);
      return rejectCredentials(cfg, req, stun::error::kUnauthorized, stats);
    }
  }
  stun::IntegrityKey key;
  if (oauth && allocation != nullptr && !oauth_allocation) {
    // An allocation made with long-term credentials stays theirs (RFC 8656 §5).
    return rejectCredentials(cfg, req, stun::error::kWrongCredentials, stats);
  }
  if (oauth) {
    Decision refusal;
    auto token_key = tokenKey(cfg, req, user, stats, refusal);
    if (!token_key) return refusal;
    key = *token_key;
  } else if (allocation != nullptr) {
    // An OAuth allocation's later requests may name any shared key (a Refresh brings a new
    // token, under any kid); the mac-key it holds decides.
    if (!oauth_allocation && user != allocation->username) {
      return rejectCredentials(cfg, req, stun::error::kWrongCredentials, stats);
    }
    key = allocation->key;
  } else {
    auto outcome = Authenticator::lookup(cfg, user, req.now.unix_seconds, algorithm);
    if (!outcome.key) {
      ++(outcome.failure == AuthFailure::kExpired ? stats.auth_expired : stats.auth_unknown_user);
      return rejectCredentials(cfg, req, stun::error::kUnauthorized, stats);
    }
    key = *outcome.key;
  }
  bool valid = stun::checkMessageIntegrity(m, key.span()) == stun::IntegrityCheck::kValid;
  if (!valid && oauth && key.size == 20) {
    // coturn's clients key MESSAGE-INTEGRITY (HMAC-SHA1) with the first 16 bytes of a 20-byte
    // mac-key, their HMAC key size for long-term credentials; responses are signed likewise.
    key.size = 16;
    valid = stun::checkMessageIntegrity(m, key.span()) == stun::IntegrityCheck::kValid;
  }
  if (!valid && allocation == nullptr && !oauth && cfg.auth_mode == AuthMode::kEphemeral) {
    // A credential minted with a secret that is being rotated out (checked only after the
    // current secret failed, so steady state costs nothing extra).
    for (const auto& previous : cfg.previous_secrets) {
      if (previous.valid_until <= req.now.unix_seconds) continue;
      key = stun::longTermKey(user, cfg.realm, restPassword(previous.secret, user), algorithm);
      valid = stun::checkMessageIntegrity(m, key.span()) == stun::IntegrityCheck::kValid;
      if (valid) break;
    }
  }
  if (!valid) {
    ++stats.auth_bad_integrity;
    return rejectCredentials(cfg, req, stun::error::kUnauthorized, stats);
  }
  if (nonces_.check(stun::decodeString(*nonce), req.five_tuple.client, req.now.unix_seconds) !=
      NonceGenerator::Check::kValid) {
    ++stats.auth_stale_nonce;
    return challenge(stun::error::kStaleNonce);
  }
  return {Decision::Kind::kAccepted, 0, key, oauth};
}

RequestAuth::Decision RequestAuth::rejectCredentials(const ServerConfig& cfg, const Request& req,
                                                     int code, ServerStats& stats) {
  const IpAddress& source = req.five_tuple.client.ip;
  if (throttle_.recordFailure(source, req.now.unix_seconds,
                              {cfg.auth_failures_per_window, cfg.auth_failure_window_seconds}) &&
      blocker_ != nullptr && cfg.block_seconds > 0 && !cfg.trusted(source) &&
      blocker_->block(req.listener, req.five_tuple, req.now.mono + Seconds(cfg.block_seconds))) {
    ++stats.sources_blocked;
  }
  return code == stun::error::kWrongCredentials ? refused(code) : challenge(code);
}

std::optional<stun::IntegrityKey> RequestAuth::tokenKey(const ServerConfig& cfg, const Request& req,
                                                        std::string_view kid, ServerStats& stats,
                                                        Decision& refusal) {
  const ServerConfig::OAuthKey* shared = nullptr;
  for (const auto& k : cfg.oauth_keys) {
    if (k.kid == kid) shared = &k;
  }
  if (shared == nullptr) {
    ++stats.auth_unknown_user;
    refusal = rejectCredentials(cfg, req, stun::error::kUnauthorized, stats);
    return std::nullopt;
  }
  const auto token = decodeAccessToken(*req.message.value(stun::attr::kAccessToken),
                                       cfg.oauth_server_name, shared->key);
  if (!token) {  // forged, or encrypted for another server or key
    ++stats.auth_bad_integrity;
    refusal = rejectCredentials(cfg, req, stun::error::kUnauthorized, stats);
    return std::nullopt;
  }
  // Within its lifetime, and not issued in the future (a minute of clock skew allowed).
  const int64_t now = req.now.unix_seconds;
  if (now > token->issued_unix + token->lifetime || token->issued_unix > now + 60) {
    ++stats.auth_expired;
    refusal = rejectCredentials(cfg, req, stun::error::kUnauthorized, stats);
    return std::nullopt;
  }
  stun::IntegrityKey key;
  std::copy_n(token->mac_key.begin(), token->mac_key_size, key.bytes.begin());
  key.size = token->mac_key_size;
  return key;
}

}  // namespace kturn::turn
