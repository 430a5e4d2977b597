// Percent-encoding and query strings for the CDS paths (RFC 3986 §2.1, §3.4); kturn-auth
// (src/auth) reads its query parameters with the same rules.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace kturn::cds {

// Encodes every byte outside RFC 3986 "unreserved" (ALPHA DIGIT - . _ ~).
std::string percentEncode(std::string_view text);
// Decodes %XX escapes, and '+' to ' ' when `plus_is_space` (query strings, as Go's url.ParseQuery
// does). std::nullopt on a malformed escape.
std::optional<std::string> percentDecode(std::string_view text, bool plus_is_space);

// "watch=true&node=n1" -> {watch: true, node: n1}. The first value of a repeated key wins, as
// Go's url.Values.Get. std::nullopt on a malformed escape.
std::optional<std::map<std::string, std::string>> parseQuery(std::string_view query);

// Go's strconv.ParseBool, which the generated STUNner server uses for `watch`:
// 1 t T TRUE true True / 0 f F FALSE false False.
std::optional<bool> parseGoBool(std::string_view text);

}  // namespace kturn::cds
