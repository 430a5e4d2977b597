#include "config/config_source.h"

#include <cctype>
#include <fstream>
#include <sstream>

#include "common/crypto.h"
#include "config/default_config.h"
#include "config/parser.h"
#include "config/validator.h"

namespace kturn::config {
namespace {

bool startsWith(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::string filePath(const std::string& origin) {
  return startsWith(origin, "file://") ? origin.substr(7) : origin;
}

}  // namespace

std::string normalizeOrigin(const std::string& origin) {
  if (origin.empty() || origin.find("://") != std::string::npos) return origin;
  if (startsWith(origin, "turn:") || startsWith(origin, "turns:")) return origin;
  const size_t colon = origin.rfind(':');
  if (colon == std::string::npos || colon + 1 == origin.size() ||
      origin.find('/') != std::string::npos) {
    return origin;
  }
  for (size_t i = colon + 1; i < origin.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(origin[i]))) return origin;
  }
  return "http://" + origin;
}

bool isReloadable(const std::string& origin) {
  return !origin.empty() && origin.find("://") == std::string::npos ? true
                                                                    : startsWith(origin, "file://");
}

Result<LoadedConfig> loadConfig(const std::string& origin) {
  LoadedConfig loaded;
  if (origin.empty()) {
    uint8_t secret[18];
    crypto::randomBytes(secret);
    loaded.config = config::makeDefaultConfig(crypto::base64Encode(secret));
    loaded.description = "embedded default";
    loaded.generated_secret = true;
  } else if (startsWith(origin, "turn:") || startsWith(origin, "turns:")) {
    auto cfg = config::configFromTurnUri(origin);
    if (!cfg) return makeError(cfg.error().code, origin + ": " + cfg.error().message);
    loaded.config = std::move(*cfg);
    loaded.description = "TURN URI";
  } else if (origin.find("://") != std::string::npos && !startsWith(origin, "file://")) {
    return makeError(Error::Code::kUnsupported,
                     origin + ": a config discovery server, not a file (the daemon watches it)");
  } else {
    const std::string path = filePath(origin);
    std::ifstream in(path);
    if (!in) return makeError(Error::Code::kNotFound, path + ": cannot open config file");
    std::stringstream text;
    text << in.rdbuf();
    auto cfg = config::parseConfig(text.str());
    if (!cfg) return makeError(cfg.error().code, path + ": " + cfg.error().message);
    loaded.config = std::move(*cfg);
    loaded.description = "file " + path;
  }
  if (auto valid = config::validate(loaded.config); !valid) {
    return makeError(valid.error().code, loaded.description + ": " + valid.error().message);
  }
  return loaded;
}

}  // namespace kturn::config
