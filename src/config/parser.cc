#include "config/parser.h"

#include "config/decoder.h"
#include "config/document.h"
#include "config/validator.h"

namespace kturn::config {

Result<StunnerConfig> decodeConfig(std::string_view text) {
  auto tree = readDocument(text);
  if (!tree) return tree.error();
  return decodeStunnerConfig(*tree);
}

Result<StunnerConfig> parseConfig(std::string_view text) {
  return parseConfig(text, processEnvironment());
}

Result<StunnerConfig> parseConfig(std::string_view text, const EnvLookup& env) {
  // The credentials as written. A document that does not even parse before substitution is
  // rejected, as stunnerd does: substitution must not be what makes the syntax valid.
  auto raw_tree = readDocument(text);
  if (!raw_tree) return raw_tree.error();
  const auto raw_credentials = decodeRawCredentials(*raw_tree);

  const std::string expanded = expandEnv(text, withStunnerPortFallback(env));
  auto config = decodeConfig(expanded);
  if (!config) return config.error();
  for (const auto& [key, value] : raw_credentials) config->auth.credentials[key] = value;

  if (auto valid = validate(*config); !valid) return valid.error();
  return config;
}

}  // namespace kturn::config
