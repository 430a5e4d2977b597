// The dataplane config's fields as data: one entry per field with its wire path, type, default,
// accepted values, whether stunnerd reads it, and a one-line description.
//
// docs/config-reference.md is rendered from this table (config_reference.h), and
// tests/config/schema_test.cc checks the table against the decoder, validator and serializer:
// every entry is read, validated and written back, every default and range is the one validate()
// applies, every key the serializer writes has an entry. Defaults and ranges come from the
// constants validate() uses (defaults.h, the member initializers of Limits), so changing one
// changes the reference. A new config field needs an entry here, or schema_test fails.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/defaults.h"

namespace kturn::config {

enum class FieldType {
  kString,  // also takes a number or boolean, as its text (decoder.h)
  kInteger,
  kBoolean,
  kStringList,
  kStringMap,  // auth.credentials: any keys, string values; the known keys have entries too
  kObject,
  kObjectList,  // listeners, clusters: the items' fields are under "listeners[]."
};

// Whether the field is STUNner's (stunnerd reads it; where kturn reads it differently, the
// description says so) or a kturn extension that stunnerd ignores.
enum class Origin { kStunner, kKturn };

enum class Presence {
  kOptional,
  kRequired,     // validate() refuses a config without it
  kConditional,  // required in some configs; FieldSpec::required_when says which
};

struct FieldSpec {
  // Keys joined by '.', with "[]" after a list of objects: "listeners[].port". Error messages use
  // the same path with the index filled in: "listeners[2].port: must be 1-65535".
  std::string_view path;
  FieldType type = FieldType::kString;
  // What a string or a list's items hold ("URL", "cluster names"), or an integer's unit
  // ("seconds"). Empty: free text or a plain count.
  std::string_view format{};
  Origin origin = Origin::kStunner;
  Presence presence = Presence::kOptional;
  std::string_view required_when{};  // kConditional only: "`auth.type` is `static`"
  // The value validate() gives an absent field, as the serializer writes it (a string's text, an
  // integer's digits). nullopt: none, the field stays unset.
  std::optional<std::string> default_value{};
  // Integers: the values validate() accepts. With zero_is_unset, 0 is accepted too and means
  // unset (or the default, if there is one).
  std::optional<IntRange> range{};
  bool zero_is_unset = false;
  // Strings with a fixed set of values: the spellings validate() writes back, the other
  // spellings it accepts (and normalizes), and whether letter case is ignored.
  std::vector<std::string_view> values{};
  std::vector<std::string_view> aliases{};
  bool any_case = false;
  // One line of Markdown. Links are relative to docs/.
  std::string description{};
  // For schema_test, JSON text: a value validate() accepts that differs from the default, and
  // (optional) one it refuses naming this field. Values out of `range` or not in `values` are
  // tried without being listed here. Containers have no sample.
  std::string_view sample{};
  std::string_view bad_sample{};
};

// Every field, each container before its fields, in the serializer's key order.
std::span<const FieldSpec> configSchema();

// The entry with this path, or nullptr.
const FieldSpec* findFieldSpec(std::string_view path);

// The path of the container a field belongs to: "admin.limits" for "admin.limits.max_channels",
// "listeners" for "listeners[].port", "" for a top-level field.
std::string_view parentPath(std::string_view path);

// True for kObject, kObjectList and kStringMap: fields whose entries have entries under them.
bool isContainer(FieldType type);

}  // namespace kturn::config
