// The certificate kturn-operator serves config discovery with (docs/cds.md#tls), and the CA the
// dataplane pods and kturn-auth verify it against.
//
// Managed (--cds-tls-secret): the CA lives in a Secret of the operator's namespace (`ca.crt`,
// `ca.key`), made by the first replica that finds none, its certificate alone in a second Secret
// (--cds-tls-ca-cert-secret); every replica signs its own serving
// certificate from it at start (in memory only) and renews it long before it expires. The CA's
// certificate, which is public, is what the operator hands the dataplane pods (KTURN_CDS_CA).
// From files (--cds-tls-cert, --cds-tls-key, --cds-tls-ca): a certificate someone else manages,
// e.g. cert-manager's Secret mounted into the operator's pod.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/certificate.h"
#include "k8s/api_client.h"

namespace kturn::op {

// The CA in Secret ns/name: read, or made and stored when the Secret does not exist (a replica
// that loses the race to create it reads the winner's). Errors name the Secret.
Result<certificate::PemPair> loadOrCreateCdsCa(k8s::ApiClient& client, const std::string& ns,
                                               const std::string& name);

// The CA's certificate alone, in Secret ns/name (key ca.crt), for what must trust the CA but never
// sign with it: kturn-auth mounts this one, so the nodes it runs on never receive the CA's key
// (the kubelet fetches a mounted Secret whole, whatever items the pod picks). Created when
// missing, replaced when it holds another certificate (a new CA). Errors name the Secret.
Result<void> publishCdsCaCertificate(k8s::ApiClient& client, const std::string& ns,
                                     const std::string& name, const std::string& certPem);

// The names a serving certificate for the CDS address `host` ("kturn-config-discovery.
// kturn-system.svc", an IP, ...) carries: the host itself and, for a Service name
// <svc>.<ns>.svc[.cluster.local], every shorter and longer form of it.
std::vector<std::string> cdsServingHosts(const std::string& host);

// Signs serving certificates from the CA, now and then every `renew_every`, and hands each to
// `install` (CdsServer::setCertificate). The first is signed in the constructor; its result is
// ready().
class CdsCertificateRenewer {
 public:
  static constexpr std::chrono::hours kValidity{24 * 90};
  static constexpr std::chrono::hours kRenewEvery{24 * 30};

  using Install = std::function<void(const certificate::PemPair&)>;
  CdsCertificateRenewer(certificate::PemPair ca, std::vector<std::string> hosts,
                        std::chrono::milliseconds renew_every = kRenewEvery);
  ~CdsCertificateRenewer();  // stops the thread
  CdsCertificateRenewer(const CdsCertificateRenewer&) = delete;
  CdsCertificateRenewer& operator=(const CdsCertificateRenewer&) = delete;

  // The certificate signed at construction, or why it could not be.
  const Result<certificate::PemPair>& first() const { return first_; }
  // Starts renewing in the background.
  void start(Install install);

 private:
  Result<certificate::PemPair> sign() const;

  const certificate::PemPair ca_;
  const std::vector<std::string> hosts_;
  const std::chrono::milliseconds renew_every_;
  Result<certificate::PemPair> first_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace kturn::op
