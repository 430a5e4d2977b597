#include "config/env_substitution.h"

#include <cstdlib>

#include "config/defaults.h"
#include "config/text_util.h"

namespace kturn::config {
namespace {

bool isShellSpecial(char c) {
  return c != '\0' && std::string_view("*#$@!?-0123456789").find(c) != std::string_view::npos;
}

bool isAlphaNum(char c) {
  return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Go's getShellName: the variable name at the start of s (the text after a '$') and the number of
// bytes it spans. An empty name with a non-zero width is bad syntax whose bytes are dropped.
std::pair<std::string_view, size_t> shellName(std::string_view s) {
  if (s[0] == '{') {
    if (s.size() > 2 && isShellSpecial(s[1]) && s[2] == '}') return {s.substr(1, 1), 3};
    for (size_t i = 1; i < s.size(); ++i) {
      if (s[i] == '}') {
        if (i == 1) return {{}, 2};  // "${}"
        return {s.substr(1, i - 1), i + 1};
      }
    }
    return {{}, 1};  // unclosed "${": drop the '{'
  }
  if (isShellSpecial(s[0])) return {s.substr(0, 1), 1};
  size_t i = 0;
  while (i < s.size() && isAlphaNum(s[i])) ++i;
  return {s.substr(0, i), i};
}

}  // namespace

EnvLookup processEnvironment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

EnvLookup withStunnerPortFallback(EnvLookup lookup) {
  return [lookup = std::move(lookup)](const std::string& name) -> std::optional<std::string> {
    if (name != kEnvPort) return lookup(name);
    auto port = lookup(name);
    // stunnerd's test is the regexp ^[0-9]+$, without a range check.
    const bool digits =
        port && !port->empty() && port->find_first_not_of("0123456789") == std::string::npos;
    if (digits) return port;
    if (auto public_port = lookup(std::string(kEnvPublicPort))) {
      if (auto p = parseGoInt(*public_port)) return std::to_string(*p);
    }
    return std::to_string(kDefaultPort);
  };
}

std::string expandEnv(std::string_view text, const EnvLookup& lookup) {
  std::string out;
  out.reserve(text.size());
  size_t copied = 0;  // text[copied, j) is still to be copied verbatim
  for (size_t j = 0; j < text.size(); ++j) {
    if (text[j] != '$' || j + 1 >= text.size()) continue;
    out.append(text.substr(copied, j - copied));
    const auto [name, width] = shellName(text.substr(j + 1));
    if (name.empty() && width == 0) {
      out.push_back('$');  // "$" not followed by a name: kept
    } else if (!name.empty()) {
      out.append(lookup(std::string(name)).value_or(""));
    }
    j += width;
    copied = j + 1;
  }
  out.append(text.substr(std::min(copied, text.size())));
  return out;
}

}  // namespace kturn::config
