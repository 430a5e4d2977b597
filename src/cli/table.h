// Plain-text tables for humans, in kubectl's style: upper-case headers, columns left-aligned and
// separated by three spaces, no borders, no trailing blanks.
#pragma once

#include <string>
#include <vector>

namespace kturn::cli {

using TableRow = std::vector<std::string>;

// `rows[0]` is the header. Rows shorter than the header are padded with empty cells. Every line
// ends with '\n'; an empty `rows` gives "".
std::string formatTable(const std::vector<TableRow>& rows);

}  // namespace kturn::cli
