// ObjectCache's change tracking: the keys that upserts, erases and relists changed, handed over
// once each with the object as it is then (what the operator's in-place snapshot applies).
#include "k8s/object_cache.h"

#include <gtest/gtest.h>

namespace kturn::k8s {
namespace {

Object node(const std::string& name, const std::string& address) {
  return Object(
      Json{{"apiVersion", "v1"},
           {"kind", "Node"},
           {"metadata", {{"name", name}}},
           {"status", {{"addresses", {{{"type", "ExternalIP"}, {"address", address}}}}}}});
}

std::vector<std::string> names(const std::vector<CachedChange>& changes) {
  std::vector<std::string> out;
  for (const CachedChange& c : changes) out.push_back(c.key.name + (c.object ? "" : " (gone)"));
  return out;
}

TEST(ObjectCache, RemembersNothingUntilAskedTo) {
  ObjectCache cache(resources::node());
  ASSERT_TRUE(cache.upsert(node("a", "192.0.2.1")));
  EXPECT_TRUE(cache.takeChanges().empty());
  cache.trackChanges();
  ASSERT_TRUE(cache.upsert(node("b", "192.0.2.2")));
  EXPECT_EQ(names(cache.takeChanges()), std::vector<std::string>{"b"});
}

TEST(ObjectCache, HandsOverEachChangedKeyOnceWithItsObjectNow) {
  ObjectCache cache(resources::node());
  cache.trackChanges();
  ASSERT_TRUE(cache.replace({node("a", "192.0.2.1"), node("b", "192.0.2.2")}));
  EXPECT_EQ(names(cache.takeChanges()), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(cache.upsert(node("a", "192.0.2.1")));  // the same: no change
  ASSERT_TRUE(cache.upsert(node("b", "192.0.2.3")));
  ASSERT_TRUE(cache.upsert(node("b", "192.0.2.4")));
  ASSERT_TRUE(cache.upsert(node("c", "192.0.2.5")));
  ASSERT_TRUE(cache.erase({"", "c"}));
  EXPECT_FALSE(cache.erase({"", "c"}));
  const std::vector<CachedChange> changes = cache.takeChanges();
  EXPECT_EQ(names(changes), (std::vector<std::string>{"b", "c (gone)"}));
  EXPECT_EQ(changes[0].object->status()["addresses"][0]["address"], "192.0.2.4");
  EXPECT_TRUE(cache.takeChanges().empty());
}

TEST(ObjectCache, ARelistHandsOverWhatItChangedOnly) {
  ObjectCache cache(resources::node());
  cache.trackChanges();
  ASSERT_TRUE(cache.replace({node("a", "192.0.2.1"), node("b", "192.0.2.2")}));
  (void)cache.takeChanges();
  // b changed, a went, c came.
  ASSERT_TRUE(cache.replace({node("b", "192.0.2.9"), node("c", "192.0.2.3")}));
  EXPECT_EQ(names(cache.takeChanges()), (std::vector<std::string>{"a (gone)", "b", "c"}));
  EXPECT_FALSE(cache.replace({node("b", "192.0.2.9"), node("c", "192.0.2.3")}));
  EXPECT_TRUE(cache.takeChanges().empty());
}

}  // namespace
}  // namespace kturn::k8s
