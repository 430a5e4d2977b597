#include "cli/table.h"

#include <algorithm>

namespace kturn::cli {

std::string formatTable(const std::vector<TableRow>& rows) {
  if (rows.empty()) return "";
  const size_t columns = rows.front().size();
  std::vector<size_t> widths(columns, 0);
  for (const TableRow& row : rows) {
    for (size_t c = 0; c < columns && c < row.size(); ++c) {
      widths[c] = std::max(widths[c], row[c].size());
    }
  }
  std::string out;
  for (const TableRow& row : rows) {
    std::string line;
    for (size_t c = 0; c < columns; ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      line += cell;
      if (c + 1 < columns) line += std::string(widths[c] - cell.size() + 3, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace kturn::cli
