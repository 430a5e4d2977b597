// The bearer token file of kturn-auth (--token-file) and of kturnctl auth (--token-file): one
// token, surrounding white space ignored, so a file written with `echo` works.
#pragma once

#include <string>

#include "kturn/result.h"

namespace kturn::auth {

// kNotFound when the file cannot be opened, kInvalidArgument when it holds only white space;
// both name the path.
Result<std::string> readTokenFile(const std::string& path);

}  // namespace kturn::auth
