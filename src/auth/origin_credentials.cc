#include "auth/origin_credentials.h"

namespace kturn::auth {

Result<std::vector<std::optional<OriginCredentials>>> parseOriginCredentials(
    const std::vector<std::string>& values, const std::vector<std::string>& origins) {
  std::vector<std::optional<OriginCredentials>> out(origins.size());
  for (const std::string& value : values) {
    std::optional<std::size_t> match;
    for (std::size_t i = 0; i < origins.size(); ++i) {
      const std::string& origin = origins[i];
      if (value.size() > origin.size() && value.compare(0, origin.size(), origin) == 0 &&
          value[origin.size()] == '=' && (!match || origin.size() > origins[*match].size())) {
        match = i;
      }
    }
    if (!match) {
      return makeError(Error::Code::kInvalidArgument,
                       "--cds-credentials " + value +
                           ": want <origin>=<token-file>[,<ca-file>] with an origin given to -c");
    }
    const std::string files = value.substr(origins[*match].size() + 1);
    const auto comma = files.find(',');
    OriginCredentials credentials{.token_file = files.substr(0, comma)};
    if (comma != std::string::npos) credentials.ca_file = files.substr(comma + 1);
    if (credentials.token_file.empty() ||
        (comma != std::string::npos && credentials.ca_file.empty())) {
      return makeError(Error::Code::kInvalidArgument,
                       "--cds-credentials " + value + ": an empty file name");
    }
    if (out[*match]) {
      const std::string& origin = origins[*match];
      return makeError(Error::Code::kInvalidArgument,
                       "--cds-credentials " + value + ": origin " + origin + " named twice");
    }
    out[*match] = std::move(credentials);
  }
  return out;
}

}  // namespace kturn::auth
