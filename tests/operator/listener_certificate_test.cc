// A TLS or DTLS listener's certificate as the renderer judges it: one that does not load costs
// only its listener (ResolvedRefs False InvalidCertificateRef, naming the Secret and the fault)
// while the Gateway's other listeners render; one out of date is served and its dates reported
// (kturn.io/CertificateValid); the Gateway's conditions name the listeners that do not serve.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "common/certificate.h"
#include "common/crypto.h"
#include "operator/clock.h"
#include "operator/render_fixture.h"

namespace kturn::op {
namespace {

using k8s::Json;
using test::kPlatform;
using test::renderYaml;

// A Gateway with a UDP listener and a TLS listener whose certificateRefs are `secrets`.
std::string gateway(const std::vector<std::string>& secrets) {
  Json refs = Json::array();
  for (const std::string& s : secrets) refs.push_back({{"name", s}});
  const Json gw = {{"apiVersion", "gateway.networking.k8s.io/v1"},
                   {"kind", "Gateway"},
                   {"metadata", {{"name", "gw"}, {"namespace", "media"}}},
                   {"spec",
                    {{"gatewayClassName", "gc"},
                     {"listeners",
                      {{{"name", "udp"}, {"port", 3478}, {"protocol", "TURN-UDP"}},
                       {{"name", "tls"},
                        {"port", 443},
                        {"protocol", "TURN-TLS"},
                        {"tls", {{"mode", "Terminate"}, {"certificateRefs", refs}}}}}}}}};
  return gw.dump() + "\n---\n";
}

std::string secret(const std::string& name, const std::string& crt, const std::string& key) {
  const Json s = {{"apiVersion", "v1"},
                  {"kind", "Secret"},
                  {"metadata", {{"name", name}, {"namespace", "media"}}},
                  {"type", "kubernetes.io/tls"},
                  {"stringData", {{"tls.crt", crt}, {"tls.key", key}}}};
  return s.dump() + "\n---\n";
}

certificate::PemPair issue(std::chrono::seconds validity) {
  auto pair = certificate::issue({.common_name = "turn.example.com", .validity = validity});
  EXPECT_TRUE(pair) << pair.error().message;
  return *pair;
}

RenderResult renderAt(const std::string& yaml, int64_t now) {
  RenderOptions options;
  options.now = now;
  return renderYaml(kPlatform + yaml, options);
}

const Json& gatewayStatus(const RenderResult& r) {
  if (const StatusUpdate* s = test::statusOf(r, "Gateway", "gw")) return s->status;
  static const Json none;
  ADD_FAILURE() << "no Gateway status";
  return none;
}

Json conditionOf(const Json& conditions, std::string_view type) {
  for (const Json& c : conditions) {
    if (c["type"] == type) return c;
  }
  return Json();
}

Json listenerCondition(const RenderResult& r, size_t listener, std::string_view type) {
  return conditionOf(gatewayStatus(r)["listeners"][listener]["conditions"], type);
}

std::vector<std::string> listenerNames(const RenderResult& r) {
  std::vector<std::string> names;
  if (r.gateways.size() != 1 || !r.gateways[0].config) return names;
  for (const config::Listener& l : r.gateways[0].config->listeners) names.push_back(l.name);
  return names;
}

bool contains(const Json& value, const std::string& part) {
  return value.is_string() && value.get<std::string>().find(part) != std::string::npos;
}

TEST(ListenerCertificate, ANonCertificateCostsOnlyItsListener) {
  const certificate::PemPair good = issue(std::chrono::hours(24));
  const RenderResult r = renderAt(
      gateway({"bad"}) + secret("bad", "this is not a certificate", good.key_pem), unixNow());
  EXPECT_EQ(listenerNames(r), std::vector<std::string>{"media/gw/udp"});

  const Json refs = listenerCondition(r, 1, "ResolvedRefs");
  EXPECT_EQ(refs["status"], "False");
  EXPECT_EQ(refs["reason"], "InvalidCertificateRef");
  EXPECT_EQ(refs["message"], "Secret media/bad (tls.crt, tls.key): no PEM certificate");
  EXPECT_EQ(listenerCondition(r, 1, "Programmed")["status"], "False");
  EXPECT_EQ(listenerCondition(r, 0, "Programmed")["status"], "True");
  EXPECT_EQ(listenerCondition(r, 1, "kturn.io/CertificateValid"), Json());

  // The Gateway names the listener and why, and still serves: Accepted with ListenersNotValid;
  // Programmed waits only for an address (none in this cluster), its message names `tls`.
  const Json& conditions = gatewayStatus(r)["conditions"];
  const Json accepted = conditionOf(conditions, "Accepted");
  EXPECT_EQ(accepted["status"], "True");
  EXPECT_EQ(accepted["reason"], "ListenersNotValid");
  EXPECT_TRUE(contains(accepted["message"], "listeners not valid: tls")) << accepted;
  const Json programmed = conditionOf(conditions, "Programmed");
  EXPECT_TRUE(contains(programmed["message"],
                       "listeners not programmed: tls: listener not rendered: Secret media/bad "
                       "(tls.crt, tls.key): no PEM certificate"))
      << programmed;
}

TEST(ListenerCertificate, AKeyOfAnotherCertificateIsRefused) {
  const certificate::PemPair one = issue(std::chrono::hours(24));
  const certificate::PemPair other = issue(std::chrono::hours(24));
  const RenderResult r =
      renderAt(gateway({"mixed"}) + secret("mixed", one.cert_pem, other.key_pem), unixNow());
  EXPECT_EQ(listenerNames(r), std::vector<std::string>{"media/gw/udp"});
  EXPECT_EQ(
      listenerCondition(r, 1, "ResolvedRefs")["message"],
      "Secret media/mixed (tls.crt, tls.key): the private key does not match the certificate");

  const RenderResult noKey = renderAt(
      gateway({"nokey"}) + secret("nokey", one.cert_pem, "-----BEGIN PRIVATE KEY-----"), unixNow());
  EXPECT_EQ(listenerCondition(noKey, 1, "ResolvedRefs")["message"],
            "Secret media/nokey (tls.crt, tls.key): no PEM private key");
}

TEST(ListenerCertificate, AGoodCertificateIsRenderedWithItsDates) {
  const certificate::PemPair good = issue(std::chrono::hours(24));
  const int64_t now = unixNow();
  const RenderResult r =
      renderAt(gateway({"good"}) + secret("good", good.cert_pem, good.key_pem), now);
  EXPECT_EQ(listenerNames(r), (std::vector<std::string>{"media/gw/udp", "media/gw/tls"}));
  const Json valid = listenerCondition(r, 1, "kturn.io/CertificateValid");
  EXPECT_EQ(valid["status"], "True");
  EXPECT_EQ(valid["reason"], "Valid");
  EXPECT_TRUE(contains(valid["message"], "Secret media/good: certificate CN = turn.example.com"))
      << valid;
  EXPECT_TRUE(contains(valid["message"], " to " + rfc3339(*certificate::notAfter(good.cert_pem))))
      << valid;
  EXPECT_EQ(conditionOf(gatewayStatus(r)["conditions"], "Accepted")["reason"], "Accepted");
}

TEST(ListenerCertificate, AnExpiredCertificateIsServedAndReportedWithItsDates) {
  const certificate::PemPair old = issue(std::chrono::hours(1));
  const auto dates = certificate::inspectServing(old.cert_pem, old.key_pem);
  ASSERT_TRUE(dates) << dates.error().message;
  const int64_t expiry = dates->not_after;
  const RenderResult r =
      renderAt(gateway({"old"}) + secret("old", old.cert_pem, old.key_pem), expiry + 3600);
  // Still loadable: the listener serves it (clients that verify refuse it, its connections stay).
  EXPECT_EQ(listenerNames(r), (std::vector<std::string>{"media/gw/udp", "media/gw/tls"}));
  EXPECT_EQ(listenerCondition(r, 1, "ResolvedRefs")["status"], "True");
  const Json valid = listenerCondition(r, 1, "kturn.io/CertificateValid");
  EXPECT_EQ(valid["status"], "False");
  EXPECT_EQ(valid["reason"], "Expired");
  EXPECT_TRUE(contains(valid["message"], "expired at " + rfc3339(expiry))) << valid;
  EXPECT_TRUE(contains(valid["message"], "valid from " + rfc3339(dates->not_before))) << valid;

  const RenderResult early =
      renderAt(gateway({"old"}) + secret("old", old.cert_pem, old.key_pem), expiry - 7200);
  const Json notYet = listenerCondition(early, 1, "kturn.io/CertificateValid");
  EXPECT_EQ(notYet["reason"], "NotYetValid");
  EXPECT_TRUE(contains(notYet["message"], "is not valid before " + rfc3339(dates->not_before)))
      << notYet;
}

TEST(ListenerCertificate, ARenewedCertificateListedAfterAnExpiredOneIsPreferred) {
  const certificate::PemPair old = issue(std::chrono::hours(1));
  const certificate::PemPair renewed = issue(std::chrono::hours(48));
  const int64_t later = *certificate::notAfter(old.cert_pem) + 60;
  const RenderResult r =
      renderAt(gateway({"missing", "garbage", "old", "renewed"}) + secret("garbage", "x", "y") +
                   secret("old", old.cert_pem, old.key_pem) +
                   secret("renewed", renewed.cert_pem, renewed.key_pem),
               later);
  ASSERT_EQ(listenerNames(r), (std::vector<std::string>{"media/gw/udp", "media/gw/tls"}));
  EXPECT_EQ(r.gateways[0].config->listeners[1].cert,
            crypto::base64Encode(crypto::asBytes(renewed.cert_pem)));
  EXPECT_EQ(listenerCondition(r, 1, "kturn.io/CertificateValid")["reason"], "Valid");
}

TEST(ListenerCertificate, EveryRefTriedIsNamedWhenNoneLoads) {
  const RenderResult r =
      renderAt(gateway({"missing", "garbage"}) + secret("garbage", "x", "y"), unixNow());
  EXPECT_EQ(listenerCondition(r, 1, "ResolvedRefs")["message"],
            "Secret media/missing not found; Secret media/garbage (tls.crt, tls.key): no PEM "
            "certificate");
}

TEST(ListenerCertificate, AGatewayWithNoListenerLeftIsNotProgrammed) {
  const std::string onlyTls = R"(
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: media}
spec:
  gatewayClassName: gc
  listeners:
  - {name: tls, port: 443, protocol: TURN-TLS, tls: {certificateRefs: [{name: bad}]}}
---
)";
  const RenderResult r = renderAt(onlyTls + secret("bad", "x", "y"), unixNow());
  const Json programmed = conditionOf(gatewayStatus(r)["conditions"], "Programmed");
  EXPECT_EQ(programmed["status"], "False");
  EXPECT_EQ(programmed["reason"], "Invalid");
  EXPECT_TRUE(contains(programmed["message"],
                       "no listener programmed; listeners not programmed: "
                       "tls: listener not rendered: Secret media/bad"))
      << programmed;
}

}  // namespace
}  // namespace kturn::op
