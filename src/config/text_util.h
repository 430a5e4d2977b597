// Small string helpers shared by the config sources. Private to src/config.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kturn::config {

std::string toLower(std::string_view text);
std::string toUpper(std::string_view text);
bool equalsIgnoreCase(std::string_view a, std::string_view b);
// Decimal digits only, no sign, value in [0, max]; leading zeros are accepted.
std::optional<uint32_t> parseDecimal(std::string_view text, uint32_t max);
// Go's strconv.Atoi: optional sign, decimal digits, fits in int64.
std::optional<int64_t> parseGoInt(std::string_view text);
// `"text"` with quotes, for error messages.
std::string quoteText(std::string_view text);

}  // namespace kturn::config
