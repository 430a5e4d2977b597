// admin.limits, kturn's quota and abuse-limit extension: parsed, validated with the field named,
// round-tripped, and absent from STUNner configs (which then keep the defaults).
#include <gtest/gtest.h>

#include "config/parser.h"
#include "config/serializer.h"

namespace kturn::config {
namespace {

std::string withAdmin(const std::string& admin) {
  return "version: v1\nadmin: " + admin +
         "\nauth: {type: static, credentials: {username: u, password: p}}\n";
}

TEST(Limits, ParsedAndRoundTripped) {
  auto c = parseConfig(withAdmin(
      "{name: gw, limits: {max_allocations: 5000, allocation_kbps: 2500, listener_kbps: 1000000, "
      "auth_failures: 5, auth_failure_window: 30, nonce_lifetime: 120, max_connections: 100, "
      "idle_timeout: 20, handshake_timeout: 4, source_quota: 40, max_permissions: 16, "
      "max_channels: 1024}}"));
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_TRUE(c->admin.limits);
  const Limits& l = *c->admin.limits;
  EXPECT_EQ(l.max_allocations, 5000);
  EXPECT_EQ(l.allocation_kbps, 2500);
  EXPECT_EQ(l.listener_kbps, 1000000);
  EXPECT_EQ(l.auth_failures, 5);
  EXPECT_EQ(l.auth_failure_window, 30);
  EXPECT_EQ(l.nonce_lifetime, 120);
  EXPECT_EQ(l.max_connections, 100);
  EXPECT_EQ(l.idle_timeout, 20);
  EXPECT_EQ(l.handshake_timeout, 4);
  EXPECT_EQ(l.source_quota, 40);
  EXPECT_EQ(l.max_permissions, 16);
  EXPECT_EQ(l.max_channels, 1024);
  auto again = parseConfig(toJson(*c));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *c);
  auto from_yaml = parseConfig(toYaml(*c));
  ASSERT_TRUE(from_yaml) << from_yaml.error().message << "\n" << toYaml(*c);
  EXPECT_EQ(*from_yaml, *c);
}

TEST(Limits, AllocationLimitsDefaultWhenAbsentAndZeroQuotaSurvivesTheTrip) {
  auto c = parseConfig(withAdmin("{name: gw, limits: {max_allocations: 10}}"));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->admin.limits->source_quota, 0);  // unlimited: clients behind one NAT share it
  EXPECT_EQ(c->admin.limits->max_permissions, 64);
  EXPECT_EQ(c->admin.limits->max_channels, 64);
  EXPECT_EQ(Limits{}.source_quota, 0);
  EXPECT_EQ(Limits{}.max_permissions, 64);
  EXPECT_EQ(Limits{}.max_channels, 64);
  const std::string json = toJson(*c);
  EXPECT_NE(json.find("\"source_quota\":0"), std::string::npos) << json;
  EXPECT_NE(json.find("\"max_permissions\":64"), std::string::npos) << json;
  EXPECT_NE(json.find("\"max_channels\":64"), std::string::npos) << json;
  EXPECT_EQ(parseConfig(json)->admin.limits, c->admin.limits);
  EXPECT_EQ(parseConfig(toYaml(*c))->admin.limits, c->admin.limits);
}

TEST(Limits, AllocationLimitBounds) {
  for (const char* ok : {"{limits: {max_permissions: 1, max_channels: 1}}",
                         "{limits: {max_permissions: 1024, max_channels: 1024}}",
                         "{limits: {source_quota: 100000}}"}) {
    auto c = parseConfig(withAdmin(ok));
    EXPECT_TRUE(c) << ok << ": " << c.error().message;
  }
  auto zero = parseConfig(withAdmin("{limits: {max_permissions: 0}}"));
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().message, "admin.limits.max_permissions: must be 1-1024, got 0");
}

TEST(Limits, UnsetFieldsKeepTheirDefaults) {
  auto c = parseConfig(withAdmin("{name: gw, limits: {allocation_kbps: 0, max_allocations: 10}}"));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->admin.limits->auth_failures, Limits{}.auth_failures);
  EXPECT_EQ(c->admin.limits->nonce_lifetime, 600);
  EXPECT_EQ(c->admin.limits->allocation_kbps, 0);  // explicit 0: unlimited, survives the trip
  EXPECT_EQ(parseConfig(toJson(*c))->admin.limits, c->admin.limits);
}

TEST(Limits, AbsentInStunnerConfigsAndInTheirOutput) {
  auto c = parseConfig(withAdmin("{name: gw}"));
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_FALSE(c->admin.limits);
  EXPECT_EQ(toJson(*c).find("limits"), std::string::npos);
}

TEST(Limits, BadValuesNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {"{limits: {max_allocations: -1}}", "admin.limits.max_allocations"},
      {"{limits: {listener_kbps: -5}}", "admin.limits.listener_kbps"},
      {"{limits: {auth_failure_window: 0}}", "admin.limits.auth_failure_window"},
      {"{limits: {nonce_lifetime: 5}}", "admin.limits.nonce_lifetime"},
      {"{limits: {nonce_lifetime: ten}}", "admin.limits.nonce_lifetime"},
      {"{limits: {max_connections: -1}}", "admin.limits.max_connections"},
      {"{limits: {idle_timeout: 1}}", "admin.limits.idle_timeout"},
      {"{limits: {handshake_timeout: 0}}", "admin.limits.handshake_timeout"},
      {"{limits: {source_quota: -1}}", "admin.limits.source_quota"},
      {"{limits: {source_quota: many}}", "admin.limits.source_quota"},
      {"{limits: {max_permissions: 0}}", "admin.limits.max_permissions"},
      {"{limits: {max_permissions: 1025}}", "admin.limits.max_permissions"},
      {"{limits: {max_channels: 0}}", "admin.limits.max_channels"},
      {"{limits: {max_channels: -3}}", "admin.limits.max_channels"},
      {"{limits: {max_channels: 5000}}", "admin.limits.max_channels"},
  };
  for (const auto& [admin, field] : cases) {
    auto c = parseConfig(withAdmin(admin));
    ASSERT_FALSE(c) << admin;
    EXPECT_NE(c.error().message.find(field), std::string::npos) << c.error().message;
  }
}

}  // namespace
}  // namespace kturn::config
