// A one-shot HTTP/1.1 GET for kturnctl's `status` (kturnd's admin server) and `auth` (kturn-auth):
// both serve plain HTTP only, so this client does too. Resolving, connecting, sending and
// reading are bounded together by one timeout, so a server that accepts and then says nothing
// cannot hang the command.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "admin/http_endpoint.h"
#include "kturn/result.h"

namespace kturn::cli {

struct HttpGetRequest {
  admin::HttpEndpoint server{};  // host and port; its path is not used
  std::string target = "/";      // path and query, e.g. "/ice?service=turn"
  std::string bearer_token{};    // sent as "Authorization: Bearer <token>" when not empty
  std::chrono::milliseconds timeout{5000};
};

struct HttpGetReply {
  unsigned status = 0;
  std::string content_type;
  std::string body;
};

// Any HTTP status is a reply; errors are network failures and timeouts (kIo), their message
// naming the URL: "GET http://127.0.0.1:8086/status: connecting: Connection refused".
Result<HttpGetReply> httpGet(const HttpGetRequest& request);

// What to tell the user about an error answer: the "message" of a JSON error body ({"code" or
// "status":..,"message":".."}, as kturnd's admin server and kturn-auth send), else the body's
// first 200 bytes, trailing white space removed.
std::string errorMessage(const std::string& body);

// Parses a URL given on the command line ("http://host[:port][/path]", as kturnd reads its
// admin endpoints; no port means `default_port`). kInvalidArgument naming `flag` otherwise.
Result<admin::HttpEndpoint> parseServerUrl(const std::string& flag, const std::string& url,
                                           uint16_t default_port);

}  // namespace kturn::cli
