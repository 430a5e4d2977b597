// CdsAuthorizer against the real kube-apiserver and kube-controller-manager of the test control
// plane: the attacks on config discovery that issue 25 lists, each refused, and the two ways in
// (a Gateway's dataplane pod, an RBAC grant) allowed. The pods are real API objects made by the
// Deployment and ReplicaSet controllers (there is no kubelet: they stay Pending), and the tokens
// come from the TokenRequest API, bound to those pods, as the kubelet's projected tokens are.
// One token is forged with the control plane's own signing key, to show an expired token fail
// where the same token unexpired passes.
#include "operator/cds_authorizer.h"

#include <gtest/gtest.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "config/base64.h"
#include "k8s/api_client.h"
#include "support/control_plane.h"

namespace kturn::op {
namespace {

using namespace std::chrono_literals;
using cds::AccessRequest;
using k8s::Json;
using Verb = cds::AccessRequest::Verb;

constexpr const char* kIssuer = "https://kubernetes.default.svc.cluster.local";  // control_plane.py

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = 30s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return done();
}

std::string base64Url(std::string_view bytes) {
  std::string out = config::encodeBase64(bytes);
  for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  while (!out.empty() && out.back() == '=') out.pop_back();
  return out;
}

// An ES256 JWT over `claims`, signed with the control plane's ServiceAccount key.
std::string signJwt(const Json& claims) {
  std::ifstream in(kturn::testing::controlPlaneDir() / "pki" / "sa.key");
  const std::string pem((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (key == nullptr) return "";
  const std::string input =
      base64Url(R"({"alg":"ES256","typ":"JWT"})") + "." + base64Url(claims.dump());
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  size_t length = 0;
  std::string der;
  if (EVP_DigestSignInit(md, nullptr, EVP_sha256(), nullptr, key) == 1 &&
      EVP_DigestSign(md, nullptr, &length, reinterpret_cast<const unsigned char*>(input.data()),
                     input.size()) == 1) {
    der.resize(length);
    EVP_DigestSign(md, reinterpret_cast<unsigned char*>(der.data()), &length,
                   reinterpret_cast<const unsigned char*>(input.data()), input.size());
    der.resize(length);
  }
  EVP_MD_CTX_free(md);
  EVP_PKEY_free(key);
  // JOSE wants r || s, 32 bytes each, not DER.
  const unsigned char* p = reinterpret_cast<const unsigned char*>(der.data());
  ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size()));
  if (sig == nullptr) return "";
  unsigned char raw[64];
  BN_bn2binpad(ECDSA_SIG_get0_r(sig), raw, 32);
  BN_bn2binpad(ECDSA_SIG_get0_s(sig), raw + 32, 32);
  ECDSA_SIG_free(sig);
  return input + "." + base64Url(std::string_view(reinterpret_cast<char*>(raw), sizeof raw));
}

class CdsAuthorizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(scope_.ready());
    media_ = scope_.ns("media");
    // A Gateway and the Deployment the operator would render for it, owned by it.
    pod_ = startDataplane(media_, "gw", createGateway(media_, "gw"));
    ASSERT_FALSE(pod_.empty());
  }

  // A Gateway ns/name (its class need not exist); its UID, "" if the API server refused it.
  std::string createGateway(const std::string& ns, const std::string& name) {
    auto gateway = scope_.admin().create(
        k8s::resources::gateway(),
        {{"apiVersion", "gateway.networking.k8s.io/v1"},
         {"kind", "Gateway"},
         {"metadata", {{"name", name}, {"namespace", ns}}},
         {"spec",
          {{"gatewayClassName", scope_.name("class")},
           {"listeners", Json::array({{{"name", "udp"}, {"port", 3478}, {"protocol", "UDP"}}})}}}});
    EXPECT_TRUE(gateway && gateway->ok()) << (gateway ? gateway->describe() : "");
    return gateway && gateway->ok() ? gateway->body["metadata"]["uid"].get<std::string>() : "";
  }

  // A Deployment named `name` in `ns`, as the operator renders it for the Gateway `gateway`
  // (labelled as the operator's, owned by the Gateway with `gatewayUid`) unless that is empty;
  // the name and UID of the pod its ReplicaSet makes.
  Json startDataplane(const std::string& ns, const std::string& name, const std::string& gatewayUid,
                      std::string gateway = "") {
    if (gateway.empty()) gateway = name;
    Json meta = {{"name", name}, {"namespace", ns}};
    if (!gatewayUid.empty()) {
      meta["labels"] = {{"stunner.l7mp.io/owned-by", "stunner"}};
      meta["ownerReferences"] = Json::array({{{"apiVersion", "gateway.networking.k8s.io/v1"},
                                              {"kind", "Gateway"},
                                              {"name", gateway},
                                              {"uid", gatewayUid}}});
    }
    const Json labels = {{"app", "stunner"}, {"test-dataplane", name}};
    auto deployment = scope_.admin().create(
        k8s::resources::deployment(),
        {{"apiVersion", "apps/v1"},
         {"kind", "Deployment"},
         {"metadata", meta},
         {"spec",
          {{"replicas", 1},
           {"selector", {{"matchLabels", labels}}},
           {"template",
            {{"metadata", {{"labels", labels}}},
             {"spec",
              {{"containers", Json::array({{{"name", "stunner-daemon"},
                                            {"image", "kturn/kturnd:test"}}})}}}}}}}});
    EXPECT_TRUE(deployment && deployment->ok()) << (deployment ? deployment->describe() : "");
    Json pod;
    EXPECT_TRUE(eventually([&] {
      auto pods = scope_.admin().list(k8s::resources::pod(), ns,
                                      "labelSelector=" + k8s::urlEncode("test-dataplane=" + name));
      if (!pods || !pods->ok() || pods->body["items"].empty()) return false;
      for (const Json& p : pods->body["items"]) {
        if (!p["metadata"].contains("deletionTimestamp")) pod = p;
      }
      return !pod.is_null();
    })) << "no pod of Deployment "
        << ns << "/" << name;
    return pod.is_null() ? Json()
                         : Json{{"name", pod["metadata"]["name"]},
                                {"uid", pod["metadata"]["uid"]},
                                {"namespace", ns}};
  }

  // A TokenRequest for ServiceAccount `sa` of `ns`, for `audience`, bound to `pod` if given.
  std::string token(const std::string& ns, const std::string& sa, const std::string& audience,
                    const Json& pod = Json()) {
    Json spec = {{"audiences", Json::array({audience})}, {"expirationSeconds", 600}};
    if (!pod.is_null()) {
      spec["boundObjectRef"] = {
          {"kind", "Pod"}, {"apiVersion", "v1"}, {"name", pod["name"]}, {"uid", pod["uid"]}};
    }
    std::string out;
    EXPECT_TRUE(eventually([&] {  // the ServiceAccount controller makes `default` soon after
      auto made = scope_.admin().request(
          {.method = "POST",
           .target = "/api/v1/namespaces/" + ns + "/serviceaccounts/" + sa + "/token",
           .body = Json{{"apiVersion", "authentication.k8s.io/v1"},
                        {"kind", "TokenRequest"},
                        {"spec", spec}}
                       .dump(),
           .contentType = "application/json"});
      if (!made || !made->ok()) return false;
      out = made->body["status"]["token"].get<std::string>();
      return true;
    })) << "TokenRequest for "
        << ns << "/" << sa;
    return out;
  }

  cds::Decision decide(const std::string& token, Verb verb, const std::string& ns,
                       const std::string& name) {
    return authorizer_(token, {.verb = verb, .namespace_ = ns, .name = name});
  }

  kturn::testing::ClusterScope scope_;
  CdsAuthorizer authorizer_{scope_.admin(), {}};
  std::string media_;
  Json pod_;
};

TEST_F(CdsAuthorizerTest, ADataplanePodReadsItsOwnGatewaysConfigAndNothingElse) {
  const std::string podToken = token(media_, "default", "kturn-cds", pod_);
  for (Verb verb : {Verb::kGet, Verb::kWatch}) {
    const cds::Decision own = decide(podToken, verb, media_, "gw");
    EXPECT_TRUE(own.authenticated && own.allowed) << own.reason;
    EXPECT_EQ(own.who, "pod " + media_ + "/" + pod_["name"].get<std::string>() +
                           " (system:serviceaccount:" + media_ + ":default)");
    const auto left = own.expires - std::chrono::system_clock::now();
    EXPECT_TRUE(left > 500s && left <= 600s) << "the token's expiry, about 600 s away";
  }
  // Another Gateway's config, the namespace's list, everything: 403.
  for (auto [verb, ns, name] : {std::tuple{Verb::kGet, media_, std::string("other")},
                                std::tuple{Verb::kWatch, media_, std::string("other")},
                                std::tuple{Verb::kList, media_, std::string()},
                                std::tuple{Verb::kWatch, std::string(), std::string()}}) {
    const cds::Decision refused = decide(podToken, verb, ns, name);
    EXPECT_TRUE(refused.authenticated);
    EXPECT_FALSE(refused.allowed) << cds::describe({verb, ns, name});
    EXPECT_NE(refused.reason.find("may read only that Gateway's config"), std::string::npos)
        << refused.reason;
  }
}

TEST_F(CdsAuthorizerTest, APodOfAnotherNamespaceOrOfAnotherWorkloadIsRefused) {
  // Same names, another namespace: a Deployment called gw, owned by a Gateway called gw there.
  const std::string other = scope_.ns("intruder");
  const Json intruder = startDataplane(other, "gw", createGateway(other, "gw"));
  const std::string intruderToken = token(other, "default", "kturn-cds", intruder);
  const cds::Decision refused = decide(intruderToken, Verb::kWatch, media_, "gw");
  EXPECT_TRUE(refused.authenticated);
  EXPECT_FALSE(refused.allowed);
  EXPECT_NE(refused.reason.find("may read only that Gateway's config"), std::string::npos)
      << refused.reason;
  // A Deployment someone else made in the Gateway's namespace, owned by the Gateway but not the
  // one the operator renders (another name): its pod gets nothing.
  auto gw = scope_.admin().get(k8s::resources::gateway(), media_, "gw");
  ASSERT_TRUE(gw && gw->ok());
  const Json impostor =
      startDataplane(media_, "impostor", gw->body["metadata"]["uid"].get<std::string>(), "gw");
  const cds::Decision impostorDecision =
      decide(token(media_, "default", "kturn-cds", impostor), Verb::kGet, media_, "gw");
  EXPECT_TRUE(impostorDecision.authenticated);
  EXPECT_FALSE(impostorDecision.allowed) << "a workload the operator did not render";
  // A pod that is no Gateway's dataplane (its Deployment has no owner) gets nothing either.
  const Json stray = startDataplane(media_, "stray", "");
  const cds::Decision strayDecision =
      decide(token(media_, "default", "kturn-cds", stray), Verb::kGet, media_, "gw");
  EXPECT_TRUE(strayDecision.authenticated);
  EXPECT_FALSE(strayDecision.allowed);
  EXPECT_NE(strayDecision.reason.find("not a dataplane pod"), std::string::npos)
      << strayDecision.reason;
}

TEST_F(CdsAuthorizerTest, ATokenForAnotherAudienceIsRefused) {
  // The audience the API server takes for its own tokens, and one made up.
  for (const std::string& audience : {std::string(kIssuer), std::string("kturn-cds-not")}) {
    const cds::Decision refused =
        decide(token(media_, "default", audience, pod_), Verb::kGet, media_, "gw");
    EXPECT_FALSE(refused.authenticated) << audience;
    EXPECT_FALSE(refused.allowed);
    EXPECT_NE(refused.reason.find("token not valid"), std::string::npos) << refused.reason;
  }
  EXPECT_FALSE(decide("not-a-token", Verb::kGet, media_, "gw").authenticated);
}

TEST_F(CdsAuthorizerTest, AnExpiredTokenIsRefusedWhereTheSameTokenUnexpiredIsNot) {
  auto sa = scope_.admin().get(kturn::testing::serviceAccountType(), media_, "default");
  ASSERT_TRUE(sa && sa->ok());
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  auto claims = [&](int64_t issued, int64_t expires) {
    return Json{
        {"iss", kIssuer},
        {"sub", "system:serviceaccount:" + media_ + ":default"},
        {"aud", Json::array({"kturn-cds"})},
        {"iat", issued},
        {"nbf", issued},
        {"exp", expires},
        {"kubernetes.io",
         {{"namespace", media_},
          {"pod", {{"name", pod_["name"]}, {"uid", pod_["uid"]}}},
          {"serviceaccount", {{"name", "default"}, {"uid", sa->body["metadata"]["uid"]}}}}}};
  };
  const cds::Decision fresh =
      decide(signJwt(claims(now - 60, now + 600)), Verb::kGet, media_, "gw");
  ASSERT_TRUE(fresh.authenticated && fresh.allowed)
      << "the forged token must pass when it has not expired: " << fresh.reason;
  const cds::Decision expired =
      decide(signJwt(claims(now - 1200, now - 600)), Verb::kGet, media_, "gw");
  EXPECT_FALSE(expired.authenticated);
  EXPECT_NE(expired.reason.find("expired"), std::string::npos) << expired.reason;
}

TEST_F(CdsAuthorizerTest, AStolenTokenIsRefusedOnceItsPodIsGone) {
  const std::string stolen = token(media_, "default", "kturn-cds", pod_);
  ASSERT_TRUE(decide(stolen, Verb::kWatch, media_, "gw").allowed);
  auto deleted = scope_.admin().request(
      {.method = "DELETE",
       .target = k8s::resources::pod().objectPath(media_, pod_["name"].get<std::string>()) +
                 "?gracePeriodSeconds=0"});
  ASSERT_TRUE(deleted && deleted->ok()) << (deleted ? deleted->describe() : "");
  cds::Decision after;
  EXPECT_TRUE(eventually([&] {
    after = decide(stolen, Verb::kWatch, media_, "gw");
    return !after.authenticated;
  })) << "still "
      << (after.allowed ? "allowed" : "authenticated") << ": " << after.reason;
  EXPECT_FALSE(after.allowed);
}

TEST_F(CdsAuthorizerTest, OtherClientsGetWhatRbacGrantsOnConfigsCdsKturnIo) {
  // kturn-auth's ServiceAccount, with no grant yet.
  const std::string kturn = scope_.ns("kturn");
  (void)scope_.serviceAccountClient("kturn-auth", "", "kturn");
  const std::string authToken = token(kturn, "kturn-auth", "kturn-cds");
  const cds::Decision none = decide(authToken, Verb::kWatch, media_, "gw");
  EXPECT_TRUE(none.authenticated);
  EXPECT_FALSE(none.allowed);
  EXPECT_NE(none.reason.find("RBAC grants no watch on configs.cds.kturn.io"), std::string::npos)
      << none.reason;

  // A Role in media for Gateway gw only, as the chart writes for auth.gateway.
  const k8s::ResourceType role{
      .group = "rbac.authorization.k8s.io", .version = "v1", .kind = "Role", .plural = "roles"};
  const k8s::ResourceType roleBinding{.group = "rbac.authorization.k8s.io",
                                      .version = "v1",
                                      .kind = "RoleBinding",
                                      .plural = "rolebindings"};
  auto made = scope_.admin().create(
      role, {{"apiVersion", "rbac.authorization.k8s.io/v1"},
             {"kind", "Role"},
             {"metadata", {{"name", "cds-gw"}, {"namespace", media_}}},
             {"rules", Json::array({{{"apiGroups", Json::array({"cds.kturn.io"})},
                                     {"resources", Json::array({"configs"})},
                                     {"resourceNames", Json::array({"gw"})},
                                     {"verbs", Json::array({"get", "watch"})}}})}});
  ASSERT_TRUE(made && made->ok()) << (made ? made->describe() : "");
  auto bound = scope_.admin().create(
      roleBinding,
      {{"apiVersion", "rbac.authorization.k8s.io/v1"},
       {"kind", "RoleBinding"},
       {"metadata", {{"name", "cds-gw"}, {"namespace", media_}}},
       {"roleRef",
        {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", "cds-gw"}}},
       {"subjects",
        Json::array(
            {{{"kind", "ServiceAccount"}, {"name", "kturn-auth"}, {"namespace", kturn}}})}});
  ASSERT_TRUE(bound && bound->ok()) << (bound ? bound->describe() : "");
  cds::Decision granted;
  EXPECT_TRUE(eventually([&] {  // RBAC is read from the API server's cache
    granted = decide(authToken, Verb::kWatch, media_, "gw");
    return granted.allowed;
  })) << granted.reason;
  EXPECT_EQ(granted.who, "system:serviceaccount:" + kturn + ":kturn-auth");
  EXPECT_FALSE(decide(authToken, Verb::kGet, media_, "other").allowed);
  EXPECT_FALSE(decide(authToken, Verb::kWatch, "", "").allowed);

  // A ClusterRole over every config: the list of all of them too.
  const std::string reader = scope_.clusterRole(
      "cds-reader", Json::array({{{"apiGroups", Json::array({"cds.kturn.io"})},
                                  {"resources", Json::array({"configs"})},
                                  {"verbs", Json::array({"get", "list", "watch"})}}}));
  (void)scope_.serviceAccountClient("kturn-auth", reader, "kturn");  // binds it
  EXPECT_TRUE(eventually([&] { return decide(authToken, Verb::kWatch, "", "").allowed; }));
  EXPECT_TRUE(decide(authToken, Verb::kList, "", "").allowed);
}

TEST(JwtExpiry, ReadsTheExpClaimOnly) {
  EXPECT_EQ(jwtExpiry("e30." + base64Url(R"({"exp":1800000000})") + ".sig"), 1800000000);
  EXPECT_FALSE(jwtExpiry("e30." + base64Url(R"({"iat":1})") + ".sig"));
  EXPECT_FALSE(jwtExpiry("no-dots"));
  EXPECT_FALSE(jwtExpiry("a.!!!.c"));
}

}  // namespace
}  // namespace kturn::op
