#include "common/log.h"

#include <cctype>
#include <optional>
#include <string>

namespace kturn::log {
namespace {

std::optional<spdlog::level::level_enum> parseLevel(std::string_view text) {
  std::string upper(text);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "TRACE") return spdlog::level::trace;
  if (upper == "DEBUG") return spdlog::level::debug;
  if (upper == "INFO") return spdlog::level::info;
  if (upper == "WARN" || upper == "WARNING") return spdlog::level::warn;
  if (upper == "ERROR") return spdlog::level::err;
  if (upper == "DISABLE" || upper == "OFF") return spdlog::level::off;
  return std::nullopt;
}

}  // namespace

Result<void> configure(std::string_view spec) {
  size_t pos = 0;
  while (pos <= spec.size()) {
    const size_t comma = spec.find(',', pos);
    const std::string_view item =
        spec.substr(pos, comma == std::string_view::npos ? spec.size() - pos : comma - pos);
    pos = comma == std::string_view::npos ? spec.size() + 1 : comma + 1;
    if (item.empty()) continue;
    const size_t colon = item.find(':');
    const std::string_view scope = colon == std::string_view::npos ? "all" : item.substr(0, colon);
    const std::string_view level_text =
        colon == std::string_view::npos ? item : item.substr(colon + 1);
    const auto level = parseLevel(level_text);
    if (!level) {
      return makeError(Error::Code::kInvalidArgument,
                       "log level \"" + std::string(level_text) + "\" unknown");
    }
    if (scope == "all") {
      spdlog::set_level(*level);
    } else if (auto logger = spdlog::get(std::string(scope))) {
      logger->set_level(*level);
    }
  }
  return {};
}

}  // namespace kturn::log
