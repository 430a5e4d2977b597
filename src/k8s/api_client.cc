#include "k8s/api_client.h"

#include <cctype>
#include <thread>

namespace kturn::k8s {

std::string ApiResponse::describe() const {
  std::string out = std::to_string(status);
  if (body.is_object()) {
    const std::string reason = body.value("reason", "");
    const std::string message = body.value("message", "");
    if (!reason.empty()) out += " " + reason;
    if (!message.empty()) out += ": " + message;
  }
  return out;
}

std::string urlEncode(std::string_view text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

Object typedObject(Json body, const ResourceType& type) {
  if (!body.contains("apiVersion") || !body["apiVersion"].is_string()) {
    body["apiVersion"] = type.apiVersion();
  }
  if (!body.contains("kind") || !body["kind"].is_string()) body["kind"] = type.kind;
  return Object(std::move(body));
}

std::vector<Object> listItems(const Json& body, const ResourceType& type) {
  std::vector<Object> out;
  if (!body.is_object() || !body.contains("items") || !body["items"].is_array()) return out;
  for (const Json& item : body["items"]) {
    if (item.is_object()) out.push_back(typedObject(item, type));
  }
  return out;
}

ApiClient::ApiClient(RestConfig config)
    : config_(std::move(config)), token_(config_.token, config_.tokenFile) {}

Result<std::unique_ptr<ApiClient>> ApiClient::create(RestConfig config) {
  if (config.tls) {
    // A bad CA, client certificate or key fails here, at startup, not at the first request.
    auto ctx = makeTlsContext(config);
    if (!ctx) return ctx.error();
  }
  return std::unique_ptr<ApiClient>(new ApiClient(std::move(config)));
}

Result<std::unique_ptr<ApiConnection>> ApiClient::connect() const {
  std::shared_ptr<boost::asio::ssl::context> tls;
  if (config_.tls) {
    auto ctx = makeTlsContext(config_);
    if (!ctx) return ctx.error();
    tls = std::move(ctx).value();
  }
  return ApiConnection::open(config_, std::move(tls), timeout_);
}

Result<ApiResponse> ApiClient::request(const HttpRequest& request) {
  HttpRequest req = request;
  std::chrono::milliseconds waited{0};
  for (int retries = 0;; ++retries) {
    req.token = token_.current();
    auto connection = connect();
    if (!connection) return connection.error();
    Result<HttpResponse> response = (*connection)->roundTrip(req, timeout_);
    if (!response) return response.error();
    const bool retryable = response->status == 429 || response->status >= 500;
    if (!retryable || !response->retryAfterSeconds || retries == kMaxRetries) {
      return toApiResponse(request, std::move(*response));
    }
    const std::chrono::milliseconds wait = std::chrono::seconds(*response->retryAfterSeconds);
    if (waited + wait > maxRetryWait_) return toApiResponse(request, std::move(*response));
    connection->reset();
    std::this_thread::sleep_for(wait);
    waited += wait;
  }
}

Result<ApiResponse> ApiClient::toApiResponse(const HttpRequest& request, HttpResponse response) {
  ApiResponse out{response.status, Json()};
  out.body = Json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (out.body.is_discarded() && response.status >= 400) {
    // Not every error is a Status: the API server answers a path it does not serve (an API
    // group or version whose CRD is not installed) with a plain-text "404 page not found".
    std::string text = response.body.substr(0, 200);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    out.body = {
        {"kind", "Status"}, {"status", "Failure"}, {"code", response.status}, {"message", text}};
    return out;
  }
  if (out.body.is_discarded()) {
    return makeError(Error::Code::kMalformed, request.method + " " + request.target + ": " +
                                                  std::to_string(response.status) +
                                                  ", body is not JSON");
  }
  return out;
}

namespace {

std::string metaString(const Json& object, const char* key) {
  const Json& meta = object.contains("metadata") ? object["metadata"] : Json();
  return meta.is_object() && meta.contains(key) && meta[key].is_string()
             ? meta[key].get<std::string>()
             : std::string();
}

std::string withQuery(std::string path, std::string_view query) {
  if (!query.empty()) path += "?" + std::string(query);
  return path;
}

}  // namespace

Result<ApiResponse> ApiClient::get(const ResourceType& type, std::string_view ns,
                                   std::string_view name) {
  return request({.method = "GET", .target = type.objectPath(ns, name)});
}

Result<ApiResponse> ApiClient::list(const ResourceType& type, std::string_view ns,
                                    std::string_view query) {
  return request({.method = "GET", .target = withQuery(type.collectionPath(ns), query)});
}

Result<ApiResponse> ApiClient::create(const ResourceType& type, const Json& object) {
  return request({.method = "POST",
                  .target = type.collectionPath(metaString(object, "namespace")),
                  .body = object.dump(),
                  .contentType = "application/json"});
}

Result<ApiResponse> ApiClient::update(const ResourceType& type, const Json& object) {
  return request(
      {.method = "PUT",
       .target = type.objectPath(metaString(object, "namespace"), metaString(object, "name")),
       .body = object.dump(),
       .contentType = "application/json"});
}

Result<ApiResponse> ApiClient::remove(const ResourceType& type, std::string_view ns,
                                      std::string_view name) {
  return request({.method = "DELETE", .target = type.objectPath(ns, name)});
}

Result<ApiResponse> ApiClient::apply(const ResourceType& type, const Json& object,
                                     const ApplyOptions& options) {
  const std::string query =
      "fieldManager=" + urlEncode(options.fieldManager) + (options.force ? "&force=true" : "");
  return request(
      {.method = "PATCH",
       .target = withQuery(
           type.objectPath(metaString(object, "namespace"), metaString(object, "name")), query),
       .body = object.dump(),
       .contentType = "application/apply-patch+yaml"});
}

Result<ApiResponse> ApiClient::applyStatus(const ResourceType& type, const Json& object,
                                           const ApplyOptions& options) {
  const std::string query =
      "fieldManager=" + urlEncode(options.fieldManager) + (options.force ? "&force=true" : "");
  return request({.method = "PATCH",
                  .target = withQuery(type.objectPath(metaString(object, "namespace"),
                                                      metaString(object, "name"), "status"),
                                      query),
                  .body = object.dump(),
                  .contentType = "application/apply-patch+yaml"});
}

Result<ApiClient::Watch> ApiClient::watch(const ResourceType& type, std::string_view ns,
                                          std::string_view query) {
  auto connection = connect();
  if (!connection) return connection.error();
  std::string target = type.collectionPath(ns) + "?watch=true";
  if (!query.empty()) target += "&" + std::string(query);
  Result<HttpResponse> head =
      (*connection)
          ->startStream({.method = "GET", .target = target, .token = token_.current()}, timeout_);
  if (!head) return head.error();
  Watch out{head->status, std::move(head->body), nullptr};
  if (out.status == 200) out.connection = std::move(connection).value();
  return out;
}

}  // namespace kturn::k8s
