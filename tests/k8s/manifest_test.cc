#include "k8s/manifest.h"

#include <gtest/gtest.h>

#include "k8s/core_api.h"
#include "k8s/gateway_api.h"
#include "k8s/yaml_writer.h"

namespace kturn::k8s {
namespace {

TEST(LoadManifests, SplitsDocumentsAndTypesScalarsLikeKubectl) {
  auto objects = loadManifests(R"(
# leading comment
---
apiVersion: v1
kind: Service
metadata: {name: a, namespace: ns, generation: 4}
spec:
  port: 3478
  quoted: "3478"
  flag: yes
  off: off
  nothing: ~
  ratio: 1.5
  hex: 0x10
---
---
apiVersion: v1
kind: Secret
metadata: {name: b}
)");
  ASSERT_TRUE(objects) << objects.error().message;
  ASSERT_EQ(objects->size(), 2u);  // empty documents are skipped
  const Object& svc = (*objects)[0];
  EXPECT_EQ(svc.kind(), "Service");
  EXPECT_EQ(svc.key().str(), "ns/a");
  EXPECT_EQ(svc.meta().generation, 4);
  const Json& spec = svc.spec();
  EXPECT_TRUE(spec["port"].is_number_integer());
  EXPECT_EQ(spec["quoted"], "3478");
  EXPECT_EQ(spec["flag"], true);
  EXPECT_EQ(spec["off"], false);
  EXPECT_TRUE(spec["nothing"].is_null());
  EXPECT_DOUBLE_EQ(spec["ratio"].get<double>(), 1.5);
  EXPECT_EQ(spec["hex"], 16);
  EXPECT_EQ((*objects)[1].key().str(), "b");  // cluster-scoped key has no namespace
}

TEST(LoadManifests, FlattensListsAndReadsJson) {
  auto list = loadManifests(R"({"apiVersion":"v1","kind":"List","items":[
      {"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}},
      {"apiVersion":"v1","kind":"Node","metadata":{"name":"n2"}}]})");
  ASSERT_TRUE(list) << list.error().message;
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[1].name(), "n2");
}

TEST(LoadManifests, ErrorsNameTheLineOrDocument) {
  auto bad = loadManifests("kind: A\n  x: [1, 2\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("line"), std::string::npos) << bad.error().message;
  auto scalar = loadManifests("---\nkind: A\nmetadata: {name: a}\n---\njust text\n");
  ASSERT_FALSE(scalar);
  EXPECT_EQ(scalar.error().message, "document 2: not a Kubernetes object (expected a mapping)");
}

TEST(LoadManifests, RefusesObjectsWithoutKindOrName) {
  auto nameless = loadManifests("kind: Service\nmetadata: {name: a}\n---\nkind: Gateway\n");
  ASSERT_FALSE(nameless);
  EXPECT_EQ(nameless.error().message, "document 2: metadata.name: required");
  auto kindless = loadManifests("metadata: {name: a}\n");
  ASSERT_FALSE(kindless);
  EXPECT_EQ(kindless.error().message, "document 1: kind: required");
}

TEST(LoadManifests, RefusesInvalidUtf8WhereItIs) {
  // As kubectl (go-yaml) does: no API server could store such a name.
  auto bad = loadManifests("kind: Gateway\nmetadata:\n  name: gw-\xff\n");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "yaml: line 3, column 12: invalid UTF-8");
  auto good = loadManifests("kind: Gateway\nmetadata:\n  name: \xE7\xBD\x91\xE5\x85\xB3\n");
  ASSERT_TRUE(good) << good.error().message;
  EXPECT_EQ(good->at(0).name(), "\xE7\xBD\x91\xE5\x85\xB3");
}

// Found by k8s_manifest_fuzz: yaml-cpp's LoadAll never returns on a stream that starts with a
// stray ',' and allocates until memory runs out. Documents are now cut at their markers.
TEST(LoadManifests, AStrayCommaEndsInsteadOfStreamingEndlessDocuments) {
  // yaml-cpp reads a lone ',' as an empty document, which is skipped like any other.
  auto lone = loadManifests(" ,\n");
  ASSERT_TRUE(lone) << lone.error().message;
  EXPECT_TRUE(lone->empty());
  auto then = loadManifests(",\n---\nkind: A\nmetadata: {name: a}\n");
  ASSERT_TRUE(then) << then.error().message;
  ASSERT_EQ(then->size(), 1u);
  EXPECT_EQ((*then)[0].name(), "a");
}

TEST(LoadManifests, DocumentMarkersSplitTheStreamAndLinesKeepTheirNumbers) {
  auto r = loadManifests(
      "# comment only\n---\n--- {kind: A, metadata: {name: a}}\n...\n---\nkind: B\n"
      "metadata:\n  name: b\n---\n");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].name(), "a");
  EXPECT_EQ((*r)[1].name(), "b");
  auto bad = loadManifests("kind: A\nmetadata: {name: a}\n---\nkind: B\n  x: [1, 2\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("line 5"), std::string::npos) << bad.error().message;
}

TEST(LoadManifests, SurvivesHostileNesting) {
  // yaml-cpp recurses on flow collections: deep nesting must be refused before it parses.
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  auto r = loadManifests("a: " + deep);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "yaml: brackets nest too deeply");
}

TEST(TypedViews, WrongTypesBecomeProblemsNamingTheField) {
  auto objects = loadManifests(R"(
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: c
  listeners:
    - name: ok
      port: 3478
      protocol: TURN-UDP
    - name: bad
      port: "3478"
      protocol: [TURN-UDP]
)");
  ASSERT_TRUE(objects);
  const Gateway gw = readGateway((*objects)[0]);
  ASSERT_EQ(gw.listeners.size(), 2u);
  EXPECT_EQ(gw.listeners[0].port, 3478);
  ASSERT_EQ(gw.problems.size(), 2u);
  EXPECT_EQ(gw.problems[0], "spec.listeners[1].protocol: expected a string, got a list");
  EXPECT_EQ(gw.problems[1], "spec.listeners[1].port: expected an integer, got a string");
}

TEST(TypedViews, SecretMergesDataAndStringData) {
  auto objects = loadManifests(R"(
apiVersion: v1
kind: Secret
metadata: {name: s, namespace: ns}
data:
  type: c3RhdGlj
  username: dXNlcg==
  broken: "!!"
stringData:
  username: override
)");
  ASSERT_TRUE(objects);
  const Secret s = readSecret((*objects)[0]);
  EXPECT_EQ(s.get("type"), "static");
  EXPECT_EQ(s.get("username"), "override");  // stringData wins, as on the API server
  EXPECT_FALSE(s.get("broken"));
  ASSERT_EQ(s.problems.size(), 1u);
  EXPECT_EQ(s.problems[0], "data.broken: not valid base64");
}

TEST(YamlWriter, QuotesStringsThatWouldReadBackAsOtherTypes) {
  Json tree = {{"a", "true"},        {"b", "3478"}, {"c", ""},
               {"d", "plain"},       {"e", 3478},   {"f", "a: b"},
               {"g", Json::array()}, {"h", "null"}, {"i", "$STUNNER_ADDR"}};
  const std::string yaml = toYaml(tree);
  auto back = readYamlDocuments(yaml);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ((*back)[0], Json::parse(tree.dump())) << yaml;
  EXPECT_NE(yaml.find("a: \"true\""), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("d: plain"), std::string::npos) << yaml;
}

}  // namespace
}  // namespace kturn::k8s
