// A guard for document parsers: YAML and JSON flow brackets nest without bound and both yaml-cpp
// and nlohmann::json recurse on them, so deep nesting is refused before either parser sees it.
#pragma once

#include <string_view>

namespace kturn {

// True if `text` opens more than `max_depth` brackets ('[' or '{') without closing them. Quotes
// are honoured roughly: a false alarm needs hundreds of brackets inside one string.
bool nestsTooDeep(std::string_view text, int max_depth);

}  // namespace kturn
