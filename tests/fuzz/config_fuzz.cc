// Fuzz target: the STUNner dataplane config reader (src/config/parser.h) on YAML or JSON text.
// A config that parses must survive the round trip stunnerd's own tooling relies on: toJson()
// (what CDS serves) and toYaml() (what `kturnctl` prints) decode and validate again, to the same
// config. The round trip skips $VAR substitution (decodeConfig + validate), since substitution
// applies to text an operator wrote, not to kturn's own output.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/utf8.h"
#include "config/parser.h"
#include "config/serializer.h"
#include "config/validator.h"
#include "fuzz_check.h"

namespace {

using namespace kturn::config;

// A fixed environment, so runs are reproducible whatever the process's environment holds.
std::optional<std::string> fakeEnv(const std::string& name) {
  if (name == "STUNNER_ADDR") return "10.0.0.1";
  if (name == "STUNNER_PORT") return "3478";
  if (name == "STUNNER_SHARED_SECRET") return "s3cret";
  if (name == "EMPTY") return "";
  return std::nullopt;
}

using Serializer = std::string (*)(const StunnerConfig&);
std::string compactJson(const StunnerConfig& c) { return toJson(c); }
std::string indentedJson(const StunnerConfig& c) { return toJson(c, 2); }

// `exact`: the text the config came from was valid UTF-8, so the serializer had nothing to
// replace and the config must come back equal. Otherwise the serializer wrote U+FFFD for invalid
// bytes (as Go's encoding/json does in stunnerd; toJson and toYaml do not agree on how many), and
// its output must be a fixed point instead.
void roundTrip(const StunnerConfig& config, Serializer serialize, const char* format, bool exact) {
  const std::string text = serialize(config);
  auto decoded = decodeConfig(text);
  if (!decoded) {
    std::fprintf(stderr, "%s round trip does not decode: %s\n---\n%s\n---\n", format,
                 decoded.error().message.c_str(), text.c_str());
  }
  FUZZ_CHECK(decoded.has_value());
  StunnerConfig again = *decoded;
  auto valid = validate(again);
  if (!valid) {
    std::fprintf(stderr, "%s round trip does not validate: %s\n---\n%s\n---\n", format,
                 valid.error().message.c_str(), text.c_str());
  }
  FUZZ_CHECK(valid.has_value());
  const bool same = exact ? again == config : serialize(again) == text;
  if (!same) {
    std::fprintf(
        stderr,
        "%s round trip differs:\n--- serialized\n%s\n--- config as JSON\n%s\n--- read back\n%s\n"
        "---\n",
        format, text.c_str(), toJson(config).c_str(), serialize(again).c_str());
  }
  FUZZ_CHECK(same);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text{reinterpret_cast<const char*>(data), size};
  (void)decodeConfig(text);
  auto parsed = parseConfig(text, EnvLookup(fakeEnv));
  if (!parsed) {
    FUZZ_CHECK(!parsed.error().message.empty());
    return 0;
  }
  const bool exact = kturn::isValidUtf8(text);
  roundTrip(*parsed, compactJson, "JSON", exact);
  roundTrip(*parsed, indentedJson, "indented JSON", exact);
  roundTrip(*parsed, toYaml, "YAML", exact);
  (void)danglingRoutes(*parsed);
  return 0;
}
