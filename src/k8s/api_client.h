// The Kubernetes REST API as kturn uses it: get, list, create, update, delete, server-side apply
// and status updates of JSON objects, and watch streams. Thread-safe: every call opens its own
// connection (the operator makes a few calls a second at most; a watch holds its connection for
// minutes), so no call waits for another.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/bearer_token.h"
#include "k8s/api_connection.h"
#include "k8s/object.h"
#include "k8s/resource_type.h"
#include "k8s/rest_config.h"
#include "kturn/result.h"

namespace kturn::k8s {

// A response of the API server: the HTTP status and the JSON body (an object, or a Status for
// errors). Transport failures are Errors instead.
struct ApiResponse {
  int status = 0;
  Json body;

  bool ok() const { return status >= 200 && status < 300; }
  // "<code> <reason>: <message>" of a Status body, for logs.
  std::string describe() const;
};

struct ApplyOptions {
  std::string fieldManager = "kturn-operator";
  bool force = true;  // the operator owns these objects: take fields over from others
};

class ApiClient {
 public:
  static Result<std::unique_ptr<ApiClient>> create(RestConfig config);

  const RestConfig& config() const { return config_; }

  Result<ApiResponse> get(const ResourceType& type, std::string_view ns, std::string_view name);
  // `query` without the leading '?': e.g. "labelSelector=a%3Db".
  Result<ApiResponse> list(const ResourceType& type, std::string_view ns = {},
                           std::string_view query = {});
  Result<ApiResponse> create(const ResourceType& type, const Json& object);
  // PUT: optimistic concurrency by metadata.resourceVersion (409 when stale).
  Result<ApiResponse> update(const ResourceType& type, const Json& object);
  Result<ApiResponse> remove(const ResourceType& type, std::string_view ns, std::string_view name);
  // Server-side apply (PATCH application/apply-patch+yaml; JSON is YAML): `object` is the whole
  // intent of this field manager. Creates the object when missing.
  Result<ApiResponse> apply(const ResourceType& type, const Json& object,
                            const ApplyOptions& options = {});
  // Server-side apply of `object`'s status through the status subresource.
  Result<ApiResponse> applyStatus(const ResourceType& type, const Json& object,
                                  const ApplyOptions& options = {});

  // Opens a watch: GET <collection>?watch=true&<query>. 200 leaves the events to
  // connection->readLine(); any other status is returned with its body.
  struct Watch {
    int status = 0;
    std::string body;
    std::unique_ptr<ApiConnection> connection;
  };
  Result<Watch> watch(const ResourceType& type, std::string_view ns, std::string_view query);

  // A raw request (tests, and anything above not covering). Every request above goes through
  // here: a 429, or a 5xx, that carries Retry-After is sent again after that many seconds, up to
  // 10 times, as client-go's rest client does (the API server sends it before it processes the
  // request: API Priority and Fairness rejecting a request it has no seat for). The last answer
  // is returned when the retries run out or the waits would pass maxRetryWait in all.
  Result<ApiResponse> request(const HttpRequest& request);

  // Per-request time limit.
  void setTimeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }
  void setMaxRetryWait(std::chrono::milliseconds wait) { maxRetryWait_ = wait; }
  static constexpr int kMaxRetries = 10;  // client-go's rest.Request default

 private:
  explicit ApiClient(RestConfig config);
  // Opens a connection with a TLS context of its own. The informers call from threads of their
  // own, and handshakes on one shared SSL_CTX race inside OpenSSL (ThreadSanitizer caught
  // libcrypto writing and comparing the same certificate data from two handshakes), so no
  // OpenSSL object is shared; a context per connection costs a CA parse per list or watch.
  Result<std::unique_ptr<ApiConnection>> connect() const;
  static Result<ApiResponse> toApiResponse(const HttpRequest& request, HttpResponse response);

  const RestConfig config_;
  BearerToken token_;
  std::chrono::milliseconds timeout_{30000};
  std::chrono::milliseconds maxRetryWait_{60000};
};

// "a=b" → "a%3Db": a query parameter value.
std::string urlEncode(std::string_view text);

// An object of `type` as the API server sent it, with apiVersion and kind set when absent: the
// server omits them on list items of built-in kinds, and the object decoders need them.
Object typedObject(Json body, const ResourceType& type);
// The items of a list response's body (a <Kind>List), each a typedObject(); items that are not
// objects are skipped.
std::vector<Object> listItems(const Json& body, const ResourceType& type);

}  // namespace kturn::k8s
