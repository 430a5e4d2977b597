#include "operator/listener_renderer.h"

#include <map>

#include "common/certificate.h"
#include "common/crypto.h"
#include "k8s/field_reader.h"
#include "operator/clock.h"
#include "operator/listener_protocol.h"
#include "operator/well_known.h"

namespace kturn::op {
namespace {

Condition condition(std::string_view type, ConditionStatus status, std::string_view reason,
                    std::string message, const k8s::Gateway& gw) {
  return {.type = std::string(type),
          .status = status,
          .reason = std::string(reason),
          .message = std::move(message),
          .observedGeneration = gw.meta.generation};
}

// Gateway API ReferenceGrant check for a Gateway referring to a Secret in another namespace.
bool secretGranted(const k8s::Gateway& gw, const k8s::ObjectKey& secret,
                   const ClusterSnapshot& snapshot) {
  for (const k8s::ReferenceGrant* rg : snapshot.referenceGrantsIn(secret.ns)) {
    bool fromOk = false;
    for (const auto& f : rg->from) {
      fromOk |= f.group == k8s::kGatewayGroup && f.kind == "Gateway" && f.ns == gw.meta.ns;
    }
    bool toOk = false;
    for (const auto& t : rg->to) {
      toOk |= t.group.empty() && t.kind == "Secret" && (!t.name || *t.name == secret.name);
    }
    if (fromOk && toOk) return true;
  }
  return false;
}

struct TlsMaterial {
  std::string cert{};  // base64 PEM
  std::string key{};
  std::string reason{};  // empty when found
  std::string message{};
  std::optional<Condition> validity{};  // kturn.io/CertificateValid of the one found
};

struct KeyValue {
  std::string_view key;
  std::string value;
};

std::optional<KeyValue> firstKey(const k8s::Secret& s, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (auto v = s.get(k)) return KeyValue{k, std::move(*v)};
  }
  return std::nullopt;
}

// The certificate's dates judged at `now`: True when valid, False with Expired or NotYetValid.
Condition validity(const k8s::ObjectKey& secret, const certificate::Served& served,
                   const k8s::Gateway& gw, const RenderOptions& options) {
  const std::string dates =
      "valid from " + rfc3339(served.not_before) + " to " + rfc3339(served.not_after);
  const std::string what = "Secret " + secret.str() + ": certificate " + served.subject;
  if (options.now > served.not_after) {
    return condition(cond::kCertificateValid, ConditionStatus::kFalse, reason::kExpired,
                     what + " expired at " + rfc3339(served.not_after) + " (" + dates +
                         "); served until the Secret holds a new one",
                     gw);
  }
  if (options.now < served.not_before) {
    return condition(cond::kCertificateValid, ConditionStatus::kFalse, reason::kNotYetValid,
                     what + " is not valid before " + rfc3339(served.not_before) + " (" + dates +
                         "); served anyway",
                     gw);
  }
  return condition(cond::kCertificateValid, ConditionStatus::kTrue, reason::kValid,
                   what + " " + dates, gw);
}

// The first certificateRefs Secret whose certificate and key load and belong together, preferring
// one valid now over one that is not (a renewed certificate listed beside an expired one).
TlsMaterial findTls(const k8s::Gateway& gw, const k8s::GatewayListener& l,
                    const ClusterSnapshot& snapshot, const RenderOptions& options) {
  TlsMaterial out{.reason = std::string(reason::kInvalidCertificateRef)};
  if (!l.tls || l.tls->certificateRefs.empty()) {
    out.message = "no tls.certificateRefs: " + l.protocol + " needs a certificate";
    return out;
  }
  if (l.tls->mode && *l.tls->mode != "Terminate") {
    out.message = "tls.mode " + *l.tls->mode + " not supported: TURN over TLS terminates";
    return out;
  }
  std::vector<std::string> why;
  std::optional<TlsMaterial> outOfDate;
  for (const k8s::SecretObjectReference& ref : l.tls->certificateRefs) {
    const k8s::ObjectKey key{ref.ns.value_or(gw.meta.ns), ref.name};
    if ((ref.group && !ref.group->empty() && *ref.group != "v1") ||
        (ref.kind && *ref.kind != "Secret")) {
      why.push_back(key.str() + ": not a Secret reference");
      continue;
    }
    if (options.enforceReferenceGrants && key.ns != gw.meta.ns &&
        !secretGranted(gw, key, snapshot)) {
      out.reason = reason::kRefNotPermitted;
      why.push_back("Secret " + key.str() + ": no ReferenceGrant in namespace " + key.ns +
                    " allows Gateways from namespace " + gw.meta.ns);
      continue;
    }
    const k8s::Secret* secret = snapshot.findSecret(key);
    if (secret == nullptr) {
      out.reason = reason::kInvalidCertificateRef;
      why.push_back("Secret " + key.str() + " not found");
      continue;
    }
    auto cert = firstKey(*secret, {"tls.crt", "crt", "cert"});
    auto pkey = firstKey(*secret, {"tls.key", "key"});
    if (!cert || !pkey) {
      out.reason = reason::kInvalidCertificateRef;
      why.push_back("Secret " + key.str() + ": keys tls.crt and tls.key required");
      continue;
    }
    // What kturnd cannot load never reaches it: it would refuse this listener (and stunnerd
    // the whole config) on every pod.
    auto served = certificate::inspectServing(cert->value, pkey->value);
    if (!served) {
      out.reason = reason::kInvalidCertificateRef;
      why.push_back("Secret " + key.str() + " (" + std::string(cert->key) + ", " +
                    std::string(pkey->key) + "): " + served.error().message);
      continue;
    }
    TlsMaterial found{.cert = crypto::base64Encode(crypto::asBytes(cert->value)),
                      .key = crypto::base64Encode(crypto::asBytes(pkey->value)),
                      .validity = validity(key, *served, gw, options)};
    if (found.validity->status == ConditionStatus::kTrue) return found;
    if (!outOfDate) outOfDate = std::move(found);
  }
  if (outOfDate) return std::move(*outOfDate);
  for (const std::string& w : why) out.message += (out.message.empty() ? "" : "; ") + w;
  return out;
}

// Problems read from spec.listeners[i], by i.
std::map<size_t, std::string> listenerProblems(const k8s::Gateway& gw) {
  std::map<size_t, std::string> out;
  const std::string prefix = "spec.listeners[";
  for (const std::string& p : gw.problems) {
    if (!p.starts_with(prefix)) continue;
    const size_t index = std::strtoul(p.c_str() + prefix.size(), nullptr, 10);
    if (!out.contains(index)) out[index] = p;
  }
  return out;
}

}  // namespace

std::vector<ListenerRender> renderListeners(const k8s::Gateway& gw, const ClusterSnapshot& snapshot,
                                            const RenderOptions& options) {
  std::vector<ListenerRender> out;
  std::map<int64_t, bool> udpPorts;
  std::map<int64_t, bool> tcpPorts;
  const auto problems = listenerProblems(gw);
  for (size_t i = 0; i < gw.listeners.size(); ++i) {
    const k8s::GatewayListener& l = gw.listeners[i];
    ListenerRender r{.spec = &l};
    auto proto = listenerProtocol(l.protocol);
    auto reject = [&](std::string_view why, std::string message, bool conflicted = false) {
      r.conditions.set(
          condition(cond::kAccepted, ConditionStatus::kFalse, why, std::move(message), gw));
      r.conditions.set(
          conflicted
              ? condition(cond::kConflicted, ConditionStatus::kTrue, reason::kProtocolConflict,
                          "multiple listeners specified with the same "
                          "Listener port and protocol",
                          gw)
              : condition(cond::kConflicted, ConditionStatus::kFalse, reason::kNoConflicts,
                          "listener protocol-port available", gw));
      r.conditions.set(condition(cond::kResolvedRefs, ConditionStatus::kTrue, reason::kResolvedRefs,
                                 "listener object references successfully resolved", gw));
    };
    if (auto p = problems.find(i); p != problems.end()) {
      reject(reason::kUnsupportedValue, p->second);
    } else if (!proto) {
      reject(reason::kUnsupportedProtocol,
             "unsupported protocol \"" + l.protocol +
                 "\": must be TURN-UDP, TURN-TCP, TURN-TLS or TURN-DTLS");
    } else if (l.port < kMinPort || l.port > kMaxPort) {
      reject(reason::kUnsupportedValue, "port " + std::to_string(l.port) + ": must be 1-65535");
    } else if (auto& used = proto->serviceProtocol == ServiceProtocol::kUdp ? udpPorts : tcpPorts;
               used[l.port]) {
      reject(reason::kPortUnavailable, "port unavailable", /*conflicted=*/true);
    } else {
      used[l.port] = true;
      r.conditions.set(condition(cond::kAccepted, ConditionStatus::kTrue, reason::kAccepted,
                                 "listener accepted", gw));
      r.conditions.set(condition(cond::kConflicted, ConditionStatus::kFalse, reason::kNoConflicts,
                                 "listener protocol-port available", gw));
      config::Listener lc{.name = gw.meta.key().str() + "/" + l.name,
                          .protocol = proto->dataplaneName,
                          .address = std::string(kListenerAddress),
                          .port = static_cast<int>(l.port)};
      TlsMaterial tls;
      if (proto->needsCertificate) tls = findTls(gw, l, snapshot, options);
      if (!tls.reason.empty()) {
        r.conditions.set(
            condition(cond::kResolvedRefs, ConditionStatus::kFalse, tls.reason, tls.message, gw));
      } else {
        lc.cert = tls.cert;
        lc.key = tls.key;
        r.conditions.set(condition(cond::kResolvedRefs, ConditionStatus::kTrue,
                                   reason::kResolvedRefs,
                                   "listener object references successfully resolved", gw));
        if (tls.validity) r.conditions.set(std::move(*tls.validity));
        r.config = std::move(lc);
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace kturn::op
