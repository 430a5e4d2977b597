// The config schema (src/config/schema.h) against the code it describes. Every check runs over
// the table, not over hand-picked fields: each leaf entry is set in a document that is then
// parsed, validated and serialized; its default, range, values and bad sample are tried the same
// way; and every key the serializer writes for a fully populated config (built without the
// schema) must have an entry.
#include "config/schema.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <set>
#include <vector>

#include "config/default_config.h"
#include "config/parser.h"
#include "config/serializer.h"
#include "config/validator.h"

namespace kturn::config {

// Names the entry in gtest's output instead of printing the pointer (found by ADL, hence outside
// the anonymous namespace).
void PrintTo(const FieldSpec* field, std::ostream* os) { *os << field->path; }

namespace {

using nlohmann::json;

const EnvLookup kNoEnv = [](const std::string&) { return std::nullopt; };

// A config that meets every cross-field rule at once, so that each field's own checks fire: a
// TURN-DTLS listener (cert and key are checked), ephemeral auth with a previous secret (its
// expiry is checked) and a static username and password too (so auth.type may become static).
// Its values differ from every sample.
json baseDocument() {
  const StunnerConfig base{
      .version = "v1",
      .auth = {.type = "ephemeral",
               .realm = "base.example.org",
               .credentials = {{"username", "base-user"},
                               {"password", "base-pass"},
                               {"secret", "base-secret"},
                               {"previous_secret", "base-old-secret"},
                               {"previous_secret_expiry", "1796066556"}}},
      .listeners = {{.name = "base-listener",
                     .protocol = "TURN-DTLS",
                     .port = 3478,
                     .cert = "YmFzZS1jZXJ0",  // "base-cert"
                     .key = "YmFzZS1rZXk=",   // "base-key"
                     .routes = {"base-cluster"}}},
      .clusters = {{.name = "base-cluster", .endpoints = {"192.0.2.10"}}},
  };
  return json::parse(toJson(base));
}

// "listeners[].port" → /listeners/0/port: the first item of each list.
json::json_pointer pointerTo(std::string_view path) {
  std::string pointer;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = std::min(path.find('.', start), path.size());
    std::string_view key = path.substr(start, dot - start);
    const bool list = key.ends_with("[]");
    if (list) key.remove_suffix(2);
    pointer.append("/").append(key).append(list ? "/0" : "");
    start = dot + 1;
  }
  return json::json_pointer(pointer);
}

// "listeners[].port" → "listeners[0].port", as an error message names it.
std::string errorPath(std::string_view path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    out += path[i];
    if (path[i] == '[') out += '0';
  }
  return out;
}

json withValue(json doc, std::string_view path, const json& value) {
  doc[pointerTo(path)] = value;
  return doc;
}

json without(json doc, std::string_view path) {
  const auto pointer = pointerTo(path);
  if (doc.contains(pointer)) doc[pointer.parent_pointer()].erase(pointer.back());
  return doc;
}

// The document parsed and validated as kturnd does, then written back: the written JSON, or the
// error message.
struct Outcome {
  std::optional<json> written{};
  std::string error{};
};

Outcome readBack(const json& doc) {
  auto config = parseConfig(doc.dump(), kNoEnv);
  if (!config) return {.error = config.error().message};
  return {.written = json::parse(toJson(*config))};
}

// The field's value in written JSON, the zero value for one left out (Go's omitempty).
json writtenValue(const json& written, const FieldSpec& f) {
  const auto pointer = pointerTo(f.path);
  if (written.contains(pointer)) return written[pointer];
  if (f.type == FieldType::kInteger) return 0;
  if (f.type == FieldType::kString) return "";
  return nullptr;
}

// A value as the schema writes its default: a string's text, an integer's digits.
std::string asDefaultText(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

void expectAccepted(const FieldSpec& f, const json& value, const json& written_as) {
  const Outcome out = readBack(withValue(baseDocument(), f.path, value));
  ASSERT_TRUE(out.written) << f.path << " = " << value.dump() << ": " << out.error;
  EXPECT_EQ(writtenValue(*out.written, f), written_as) << f.path << " = " << value.dump();
}

// Refused with an error about this field: "listeners[0].port: ...", or about one item of it,
// "clusters[0].endpoints[0]: ...".
void expectRefused(const FieldSpec& f, const json& doc, const std::string& what) {
  const Outcome out = readBack(doc);
  ASSERT_FALSE(out.written) << f.path << ": " << what << " was accepted";
  const std::string want = errorPath(f.path);
  EXPECT_TRUE(out.error.starts_with(want + ":") || out.error.starts_with(want + "["))
      << f.path << ": " << what << " was refused naming another field: " << out.error;
}

std::vector<const FieldSpec*> fieldsWhere(const std::function<bool(const FieldSpec&)>& keep) {
  std::vector<const FieldSpec*> out;
  for (const FieldSpec& f : configSchema()) {
    if (keep(f)) out.push_back(&f);
  }
  return out;
}

bool isLeaf(const FieldSpec& f) { return !isContainer(f.type); }

// Test names from paths: "listeners[].port" → "listeners_port".
std::string testName(const ::testing::TestParamInfo<const FieldSpec*>& info) {
  std::string out;
  for (const char c : info.param->path) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += c;
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  return out;
}

// Every Latin letter in the other case: "TURN-udp" → "turn-UDP".
std::string flipCase(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    c = static_cast<char>(std::islower(u) ? std::toupper(u) : std::tolower(u));
  }
  return out;
}

// The table itself.

TEST(ConfigSchema, PathsAreUniqueAndEachFieldFollowsItsContainer) {
  std::set<std::string_view> seen;
  for (const FieldSpec& f : configSchema()) {
    EXPECT_TRUE(seen.insert(f.path).second) << "duplicate entry " << f.path;
    const std::string_view parent = parentPath(f.path);
    if (parent.empty()) continue;
    const FieldSpec* container = findFieldSpec(parent);
    ASSERT_NE(container, nullptr) << f.path << ": no entry for " << parent;
    EXPECT_TRUE(isContainer(container->type)) << f.path << ": " << parent << " holds no fields";
    EXPECT_TRUE(seen.contains(parent)) << f.path << " comes before its container " << parent;
    const bool in_list = f.path.substr(parent.size()).starts_with("[].");
    EXPECT_EQ(in_list, container->type == FieldType::kObjectList) << f.path;
  }
}

TEST(ConfigSchema, EntriesAreWellFormed) {
  for (const FieldSpec& f : configSchema()) {
    SCOPED_TRACE(std::string(f.path));
    EXPECT_FALSE(f.description.empty());
    EXPECT_EQ(f.description.find('\n'), std::string::npos) << "one line";
    EXPECT_TRUE(!f.range || f.type == FieldType::kInteger);
    EXPECT_TRUE(!f.zero_is_unset || (f.range && f.range->min > 0));
    EXPECT_TRUE(f.values.empty() || f.type == FieldType::kString);
    EXPECT_TRUE(f.aliases.empty() || !f.values.empty());
    EXPECT_EQ(f.required_when.empty(), f.presence != Presence::kConditional);
    EXPECT_FALSE(f.presence == Presence::kRequired && f.default_value);
    if (isContainer(f.type)) {
      EXPECT_TRUE(f.sample.empty() && f.bad_sample.empty() && !f.default_value);
      continue;
    }
    ASSERT_TRUE(json::accept(f.sample)) << "sample " << f.sample;
    const json sample = json::parse(f.sample);
    EXPECT_TRUE(f.type != FieldType::kInteger || sample.is_number_integer());
    EXPECT_TRUE(f.type != FieldType::kString || sample.is_string());
    EXPECT_TRUE(f.type != FieldType::kStringList || sample.is_array());
    EXPECT_TRUE(f.bad_sample.empty() || json::accept(f.bad_sample)) << f.bad_sample;
    if (f.default_value) {
      // Else the round trip would not show that the field was read at all.
      EXPECT_NE(asDefaultText(sample), *f.default_value) << "the sample is the default";
    }
    if (f.default_value && f.range) {
      const int value = std::stoi(*f.default_value);
      EXPECT_TRUE(f.range->contains(value)) << "default " << value;
    }
    if (f.default_value && !f.values.empty()) {
      EXPECT_NE(std::find(f.values.begin(), f.values.end(), *f.default_value), f.values.end())
          << "default " << *f.default_value << " is not one of the values";
    }
  }
}

TEST(ConfigSchema, BaseDocumentIsValidAndHoldsNoSample) {
  const Outcome base = readBack(baseDocument());
  ASSERT_TRUE(base.written) << base.error;
  for (const FieldSpec* f : fieldsWhere(isLeaf)) {
    if (f->values.size() == 1) continue;  // version: "v1" is all there is
    const auto pointer = pointerTo(f->path);
    if (base.written->contains(pointer)) {
      EXPECT_NE((*base.written)[pointer], json::parse(f->sample))
          << f->path << ": the base document already holds the sample";
    }
  }
}

// What the serializer writes.

// The path of every key in written JSON that has no entry.
void collectUnknownKeys(const json& object, const std::string& path,
                        std::vector<std::string>& unknown) {
  for (const auto& [key, value] : object.items()) {
    const std::string field = path.empty() ? key : path + "." + key;
    const FieldSpec* f = findFieldSpec(field);
    if (f == nullptr) {
      unknown.push_back(field);
    } else if (f->type == FieldType::kObject || f->type == FieldType::kStringMap) {
      collectUnknownKeys(value, field, unknown);
    } else if (f->type == FieldType::kObjectList) {
      for (const json& item : value) collectUnknownKeys(item, field + "[]", unknown);
    }
  }
}

// Every member of every model struct set, written without the schema's help, so that a field
// the schema lacks shows up as an unknown key. TheFullyPopulatedConfigSetsEveryMember keeps it
// whole.
StunnerConfig fullyPopulatedConfig() {
  return StunnerConfig{
      .version = "v1",
      .admin = {.name = "full",
                .loglevel = "all:DEBUG",
                .metrics_endpoint = "http://:8080/metrics",
                .healthcheck_endpoint = "http://:8086",
                .user_quota = 10,
                .offload_engine = "XDP",
                .offload_interfaces = {"eth0"},
                .license_config = LicenseConfig{.key = "k", .hmac = "h"},
                .limits = Limits{.max_allocations = 1,
                                 .allocation_kbps = 2,
                                 .listener_kbps = 3,
                                 .auth_failures = 4,
                                 .auth_failure_window = 5,
                                 .nonce_lifetime = 60,
                                 .max_connections = 7,
                                 .idle_timeout = 8,
                                 .handshake_timeout = 9,
                                 .source_quota = 10,
                                 .max_permissions = 11,
                                 .max_channels = 12,
                                 .block_seconds = 13,
                                 .trusted_networks = {"10.0.0.0/8"}},
                .capacity = Capacity{.allocations = 13,
                                     .relay_kbps = 14,
                                     .cpu_percent = 15,
                                     .resume_percent = 16},
                .region = "eu-central",
                .mobility = true},
      .auth = {.type = "ephemeral",
               .realm = "full.example.org",
               .credentials = {{"username", "u"},
                               {"password", "p"},
                               {"secret", "s"},
                               {"previous_secret", "old"},
                               {"previous_secret_expiry", "1796066556"}},
               .oauth_server_name = "full.example.org",
               .oauth_keys = {"north:A128GCM:MTIzNDU2Nzg5MDEyMzQ1Ngo="}},
      .listeners = {{.name = "tls",
                     .protocol = "TURN-TLS",
                     .public_address = "198.51.100.7",
                     .public_port = 443,
                     .address = "127.0.0.1",
                     .port = 3479,
                     .bind_address = "127.0.0.1",
                     .min_relay_port = 40000,
                     .max_relay_port = 40100,
                     .cert = "Y2VydGlmaWNhdGU=",
                     .key = "cHJpdmF0ZSBrZXk=",
                     .routes = {"media"},
                     .alternate_servers = {"198.51.100.8:443"},
                     .alternate_domain = "turn-fra.example.org"}},
      .clusters = {{.name = "media",
                    .type = "STATIC",
                    .protocol = "UDP",
                    .endpoints = {"10.0.0.0/8:<1000-2000>"}}},
  };
}

// Set: not empty, not zero. For the integers of Limits, whose zero is a value, too.
bool isSet(const std::string& v) { return !v.empty(); }
bool isSet(int v) { return v != 0; }
template <class T>
bool isSet(const std::vector<T>& v) {
  return !v.empty();
}
template <class T>
bool isSet(const std::optional<T>& v) {
  return v.has_value();
}
template <class K, class V>
bool isSet(const std::map<K, V>& v) {
  return !v.empty();
}

// The structured bindings stop compiling when a member is added to a model struct: then set it
// in fullyPopulatedConfig() (and give it a schema entry).
TEST(ConfigSchema, TheFullyPopulatedConfigSetsEveryMember) {
  StunnerConfig config = fullyPopulatedConfig();
  ASSERT_TRUE(validate(config)) << validate(config).error().message;
  const auto& [version, admin, auth, listeners, clusters] = config;
  EXPECT_TRUE(isSet(version) && isSet(listeners) && isSet(clusters));
  const auto& [name, loglevel, metrics_endpoint, healthcheck_endpoint, user_quota, offload_engine,
               offload_interfaces, license_config, limits, capacity, region, mobility] = admin;
  EXPECT_TRUE(isSet(name) && isSet(loglevel) && isSet(metrics_endpoint) &&
              isSet(healthcheck_endpoint) && isSet(user_quota) && isSet(offload_engine) &&
              isSet(offload_interfaces) && isSet(license_config) && isSet(limits) &&
              isSet(capacity) && isSet(region) && isSet(mobility));
  const auto& [license_key, hmac] = *license_config;
  EXPECT_TRUE(isSet(license_key) && isSet(hmac));
  const auto& [max_allocations, allocation_kbps, listener_kbps, auth_failures, auth_failure_window,
               nonce_lifetime, max_connections, idle_timeout, handshake_timeout, source_quota,
               max_permissions, max_channels, block_seconds, trusted_networks] = *limits;
  for (const int value :
       {max_allocations, allocation_kbps, listener_kbps, auth_failures, auth_failure_window,
        nonce_lifetime, max_connections, idle_timeout, handshake_timeout, source_quota,
        max_permissions, max_channels, block_seconds}) {
    EXPECT_TRUE(isSet(value));
  }
  EXPECT_TRUE(isSet(trusted_networks));
  const auto& [allocations, relay_kbps, cpu_percent, resume_percent] = *capacity;
  for (const int value : {allocations, relay_kbps, cpu_percent, resume_percent}) {
    EXPECT_TRUE(isSet(value));
  }
  const auto& [type, realm, credentials, oauth_server_name, oauth_keys] = auth;
  EXPECT_TRUE(isSet(type) && isSet(realm) && isSet(credentials) && isSet(oauth_server_name) &&
              isSet(oauth_keys));
  const auto& [listener_name, protocol, public_address, public_port, address, port, bind_address,
               min_relay_port, max_relay_port, cert, key, routes, alternate_servers,
               alternate_domain] = listeners[0];
  EXPECT_TRUE(isSet(listener_name) && isSet(protocol) && isSet(public_address) &&
              isSet(public_port) && isSet(address) && isSet(port) && isSet(bind_address) &&
              isSet(min_relay_port) && isSet(max_relay_port) && isSet(cert) && isSet(key) &&
              isSet(routes) && isSet(alternate_servers) && isSet(alternate_domain));
  const auto& [cluster_name, cluster_type, cluster_protocol, endpoints] = clusters[0];
  EXPECT_TRUE(isSet(cluster_name) && isSet(cluster_type) && isSet(cluster_protocol) &&
              isSet(endpoints));
}

TEST(ConfigSchema, EveryKeyOfAFullyPopulatedConfigHasAnEntryAndEveryEntryAKey) {
  StunnerConfig config = fullyPopulatedConfig();
  ASSERT_TRUE(validate(config));
  const json written = json::parse(toJson(config));
  std::vector<std::string> unknown;
  collectUnknownKeys(written, "", unknown);
  EXPECT_TRUE(unknown.empty()) << "written but not in the schema: "
                               << ::testing::PrintToString(unknown);
  for (const FieldSpec& f : configSchema()) {
    EXPECT_TRUE(written.contains(pointerTo(f.path))) << f.path << " is not written";
  }
}

TEST(ConfigSchema, EveryKeyOfTheBuiltInConfigsHasAnEntry) {
  auto from_uri = configFromTurnUri("turns://user:pass@127.0.0.1:443?transport=tls");
  ASSERT_TRUE(from_uri) << from_uri.error().message;
  for (const StunnerConfig& config : {makeDefaultConfig("secret"), *from_uri}) {
    std::vector<std::string> unknown;
    collectUnknownKeys(json::parse(toJson(config)), "", unknown);
    EXPECT_TRUE(unknown.empty()) << "written but not in the schema: "
                                 << ::testing::PrintToString(unknown);
  }
}

// Each field on its own, parameterized over the table.

class LeafFieldTest : public ::testing::TestWithParam<const FieldSpec*> {};

TEST_P(LeafFieldTest, SampleIsReadValidatedAndWrittenBack) {
  const FieldSpec& f = *GetParam();
  const json sample = json::parse(f.sample);
  expectAccepted(f, sample, sample);
}

INSTANTIATE_TEST_SUITE_P(Schema, LeafFieldTest, ::testing::ValuesIn(fieldsWhere(isLeaf)), testName);

class DefaultedFieldTest : public ::testing::TestWithParam<const FieldSpec*> {};

TEST_P(DefaultedFieldTest, AbsentFieldTakesTheDefault) {
  const FieldSpec& f = *GetParam();
  // Set first, so the objects around the field exist (admin.limits), then removed.
  const json doc = without(withValue(baseDocument(), f.path, json::parse(f.sample)), f.path);
  const Outcome out = readBack(doc);
  ASSERT_TRUE(out.written) << f.path << " absent: " << out.error;
  EXPECT_EQ(asDefaultText(writtenValue(*out.written, f)), *f.default_value) << f.path;
}

INSTANTIATE_TEST_SUITE_P(Schema, DefaultedFieldTest,
                         ::testing::ValuesIn(fieldsWhere([](const FieldSpec& f) {
                           return f.default_value.has_value();
                         })),
                         testName);

class RangedFieldTest : public ::testing::TestWithParam<const FieldSpec*> {};

TEST_P(RangedFieldTest, BoundsAreAcceptedAndValuesBeyondRefused) {
  const FieldSpec& f = *GetParam();
  const IntRange range = *f.range;
  expectAccepted(f, range.min, range.min);
  expectAccepted(f, range.max, range.max);
  // Just below the range, unless that is the 0 meaning "unset".
  const int below = (f.zero_is_unset && range.min == 1) ? -1 : range.min - 1;
  expectRefused(f, withValue(baseDocument(), f.path, below), std::to_string(below));
  if (range.max < std::numeric_limits<int>::max()) {
    expectRefused(f, withValue(baseDocument(), f.path, range.max + 1),
                  std::to_string(range.max + 1));
  }
  if (f.zero_is_unset) {
    const Outcome out = readBack(withValue(baseDocument(), f.path, 0));
    EXPECT_TRUE(out.written) << f.path << " = 0: " << out.error;
  }
}

INSTANTIATE_TEST_SUITE_P(Schema, RangedFieldTest,
                         ::testing::ValuesIn(fieldsWhere([](const FieldSpec& f) {
                           return f.range.has_value();
                         })),
                         testName);

class EnumFieldTest : public ::testing::TestWithParam<const FieldSpec*> {};

TEST_P(EnumFieldTest, ValuesAndAliasesAreAcceptedAndOthersRefused) {
  const FieldSpec& f = *GetParam();
  for (const std::string_view view : f.values) {
    const std::string value(view);
    expectAccepted(f, value, value);
    const json other_case = flipCase(value);
    if (f.any_case) {
      expectAccepted(f, other_case, value);
    } else {
      expectRefused(f, withValue(baseDocument(), f.path, other_case), other_case.dump());
    }
  }
  for (const std::string_view view : f.aliases) {
    const std::string alias(view);
    const Outcome out = readBack(withValue(baseDocument(), f.path, alias));
    EXPECT_TRUE(out.written) << f.path << " = " << alias << ": " << out.error;
  }
  expectRefused(f, withValue(baseDocument(), f.path, "no-such-value"), "no-such-value");
}

INSTANTIATE_TEST_SUITE_P(Schema, EnumFieldTest,
                         ::testing::ValuesIn(fieldsWhere([](const FieldSpec& f) {
                           return !f.values.empty();
                         })),
                         testName);

class BadSampleTest : public ::testing::TestWithParam<const FieldSpec*> {};

TEST_P(BadSampleTest, IsRefusedNamingTheField) {
  const FieldSpec& f = *GetParam();
  expectRefused(f, withValue(baseDocument(), f.path, json::parse(f.bad_sample)),
                std::string(f.bad_sample));
}

INSTANTIATE_TEST_SUITE_P(Schema, BadSampleTest,
                         ::testing::ValuesIn(fieldsWhere([](const FieldSpec& f) {
                           return !f.bad_sample.empty();
                         })),
                         testName);

class RequiredFieldTest : public ::testing::TestWithParam<const FieldSpec*> {};

TEST_P(RequiredFieldTest, AbsentFieldIsRefusedNamingIt) {
  const FieldSpec& f = *GetParam();
  expectRefused(f, without(baseDocument(), f.path), "leaving it out");
}

INSTANTIATE_TEST_SUITE_P(Schema, RequiredFieldTest,
                         ::testing::ValuesIn(fieldsWhere([](const FieldSpec& f) {
                           return f.presence == Presence::kRequired;
                         })),
                         testName);

}  // namespace

}  // namespace kturn::config
