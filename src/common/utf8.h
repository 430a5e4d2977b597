// UTF-8 validation for text that other tools will read as Unicode: Kubernetes manifests (the API
// server, kubectl and go-yaml refuse invalid UTF-8) and anything serialized to JSON, where invalid
// bytes would be replaced and a round trip would no longer give back what was read.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace kturn {

// The offset of the first byte that does not belong to a well-formed UTF-8 sequence (RFC 3629:
// no overlong forms, no surrogates, nothing past U+10FFFF), or nullopt if `text` is valid.
std::optional<size_t> firstInvalidUtf8(std::string_view text);

inline bool isValidUtf8(std::string_view text) { return !firstInvalidUtf8(text).has_value(); }

}  // namespace kturn
