#include "operator/cds_tls.h"

#include "common/log.h"
#include "config/base64.h"

namespace kturn::op {
namespace {

using k8s::Json;

constexpr const char* kCaCertKey = "ca.crt";
constexpr const char* kCaKeyKey = "ca.key";

Result<certificate::PemPair> caFromSecret(const Json& secret, const std::string& where) {
  const Json& data = secret.value("data", Json::object());
  auto field = [&](const char* key) -> std::optional<std::string> {
    if (!data.contains(key) || !data[key].is_string()) return std::nullopt;
    return config::decodeBase64(data[key].get<std::string>());
  };
  auto cert = field(kCaCertKey);
  auto key = field(kCaKeyKey);
  if (!cert || !key || cert->empty() || key->empty()) {
    return makeError(Error::Code::kInvalidArgument,
                     where + ": wants base64 data keys " + kCaCertKey + " and " + kCaKeyKey);
  }
  return certificate::PemPair{.cert_pem = std::move(*cert), .key_pem = std::move(*key)};
}

// An Opaque Secret of the operator's (labelled as such) holding `data`, each value base64-encoded.
Json operatorSecret(const std::string& ns, const std::string& name,
                    std::initializer_list<std::pair<const char*, const std::string*>> data) {
  Json encoded = Json::object();
  for (const auto& [key, value] : data) encoded[key] = config::encodeBase64(*value);
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata",
           {{"name", name},
            {"namespace", ns},
            {"labels", {{"app.kubernetes.io/managed-by", "kturn-operator"}}}}},
          {"type", "Opaque"},
          {"data", std::move(encoded)}};
}

}  // namespace

Result<certificate::PemPair> loadOrCreateCdsCa(k8s::ApiClient& client, const std::string& ns,
                                               const std::string& name) {
  const std::string where = "CDS CA Secret " + ns + "/" + name;
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto got = client.get(k8s::resources::secret(), ns, name);
    if (!got) return makeError(got.error().code, where + ": " + got.error().message);
    if (got->ok()) return caFromSecret(got->body, where);
    if (got->status != 404) return makeError(Error::Code::kIo, where + ": " + got->describe());
    auto ca = certificate::issue({.common_name = "kturn config discovery CA",
                                  .ca = true,
                                  .validity = std::chrono::hours(24 * 365 * 10)});
    if (!ca) return ca.error();
    const Json secret =
        operatorSecret(ns, name, {{kCaCertKey, &ca->cert_pem}, {kCaKeyKey, &ca->key_pem}});
    auto created = client.create(k8s::resources::secret(), secret);
    if (!created) return makeError(created.error().code, where + ": " + created.error().message);
    if (created->ok()) {
      log::scope("operator")->info("{}: created a new CA", where);
      return ca;
    }
    if (created->status != 409) {
      return makeError(Error::Code::kIo, where + ": create: " + created->describe());
    }
    // Another replica made it first: read theirs.
  }
  return makeError(Error::Code::kIo, where + ": neither found nor created");
}

Result<void> publishCdsCaCertificate(k8s::ApiClient& client, const std::string& ns,
                                     const std::string& name, const std::string& certPem) {
  const std::string where = "CDS CA certificate Secret " + ns + "/" + name;
  Json secret = operatorSecret(ns, name, {{kCaCertKey, &certPem}});
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto got = client.get(k8s::resources::secret(), ns, name);
    if (!got) return makeError(got.error().code, where + ": " + got.error().message);
    if (!got->ok() && got->status != 404) {
      return makeError(Error::Code::kIo, where + ": " + got->describe());
    }
    if (got->ok()) {
      const Json data = got->body.value("data", Json::object());
      if (data.size() == 1 && data.value(kCaCertKey, "") == secret["data"][kCaCertKey]) return {};
      // Another CA's certificate (or a key beside it): replace the whole Secret, at the version
      // read, so that a replica racing with another CA loses with a 409 and reads again.
      secret["metadata"]["resourceVersion"] = got->body["metadata"].value("resourceVersion", "");
    } else {
      secret["metadata"].erase("resourceVersion");
    }
    auto written = got->ok() ? client.update(k8s::resources::secret(), secret)
                             : client.create(k8s::resources::secret(), secret);
    if (!written) return makeError(written.error().code, where + ": " + written.error().message);
    if (written->ok()) {
      log::scope("operator")->info("{}: {}", where, got->ok() ? "replaced" : "created");
      return {};
    }
    if (written->status != 409)
      return makeError(Error::Code::kIo, where + ": " + written->describe());
  }
  return makeError(Error::Code::kIo, where + ": conflicting writes");
}

std::vector<std::string> cdsServingHosts(const std::string& host) {
  std::vector<std::string> hosts = {host};
  // <svc>.<ns>.svc[.cluster.local]: a client may use any of the forms.
  const size_t first = host.find('.');
  const size_t second = first == std::string::npos ? first : host.find('.', first + 1);
  if (second == std::string::npos) return hosts;
  const std::string rest = host.substr(second + 1);
  if (rest != "svc" && rest != "svc.cluster.local") return hosts;
  const std::string service = host.substr(0, first);
  const std::string ns = host.substr(first + 1, second - first - 1);
  for (const std::string& form : {service, service + "." + ns, service + "." + ns + ".svc",
                                  service + "." + ns + ".svc.cluster.local"}) {
    if (form != host) hosts.push_back(form);
  }
  return hosts;
}

CdsCertificateRenewer::CdsCertificateRenewer(certificate::PemPair ca,
                                             std::vector<std::string> hosts,
                                             std::chrono::milliseconds renew_every)
    : ca_(std::move(ca)), hosts_(std::move(hosts)), renew_every_(renew_every), first_(sign()) {}

CdsCertificateRenewer::~CdsCertificateRenewer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Result<certificate::PemPair> CdsCertificateRenewer::sign() const {
  return certificate::issue(
      {.common_name = hosts_.empty() ? "kturn-config-discovery" : hosts_.front(),
       .hosts = hosts_,
       .validity = kValidity},
      &ca_);
}

void CdsCertificateRenewer::start(Install install) {
  thread_ = std::thread([this, install = std::move(install)] {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (wake_.wait_for(lock, renew_every_, [this] { return stopping_; })) return;
      lock.unlock();
      auto next = sign();
      if (next) {
        install(*next);
        log::scope("operator")->info("CDS: serving certificate renewed");
      } else {
        log::scope("operator")
            ->error("CDS: renewing the serving certificate: {}", next.error().message);
      }
      lock.lock();
    }
  });
}

}  // namespace kturn::op
