// The request/response pair an admin route sees. Deliberately smaller than an HTTP library's
// message types: admin routes are GET-only, bodiless and answer with one content type, and keeping
// Beast out of this header lets the daemon register routes without pulling in Boost.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace kturn::admin {

struct Request {
  std::string method;         // "GET" or "HEAD"; the server answers anything else with 405 itself
  std::string target;         // as sent: "/metrics?name[]=x"
  std::string path;           // target without the query: "/metrics"
  std::string query;          // after '?', undecoded; empty when absent
  std::string authorization;  // the Authorization header as sent; empty when absent
};

struct Response {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Called on the server's own thread, one request at a time per server: it must be thread-safe
// with respect to the daemon's other threads and quick (it blocks every other client of that
// server while it runs). An exception escaping it becomes a 500.
using Handler = std::function<Response(const Request&)>;

// Whether `request` carries "Authorization: Bearer <token>" (compared in constant time). An empty
// `token` requires nothing.
bool bearerAuthorized(const Request& request, std::string_view token);

}  // namespace kturn::admin
