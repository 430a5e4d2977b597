#include "admin/handler.h"

#include "common/crypto.h"

namespace kturn::admin {

bool bearerAuthorized(const Request& request, std::string_view token) {
  if (token.empty()) return true;
  constexpr std::string_view kBearer = "Bearer ";
  const std::string_view header = request.authorization;
  if (header.size() <= kBearer.size() || header.substr(0, kBearer.size()) != kBearer) return false;
  return crypto::equalConstantTime(crypto::asBytes(header.substr(kBearer.size())),
                                   crypto::asBytes(token));
}

}  // namespace kturn::admin
