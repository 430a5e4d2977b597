#include "auth/token_file.h"

#include <fstream>
#include <sstream>

namespace kturn::auth {

Result<std::string> readTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return makeError(Error::Code::kNotFound, path + ": cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string token = buffer.str();
  const auto first = token.find_first_not_of(" \t\r\n");
  const auto last = token.find_last_not_of(" \t\r\n");
  if (first == std::string::npos) {
    return makeError(Error::Code::kInvalidArgument, path + ": empty token");
  }
  return token.substr(first, last - first + 1);
}

}  // namespace kturn::auth
