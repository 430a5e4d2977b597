// Config texts shared by the tests, shaped like STUNner's documented examples
// (cmd/stunnerd/README.md, deploy/manifests/stunner-iperf-test.conf), written for kturn.
#pragma once

#include <string>
#include <string_view>

#include "config/base64.h"

namespace kturn::config::testing {

// A syntactically plausible PEM, base64-encoded as STUNner's operator renders Secrets.
inline std::string fakeCertB64() {
  return encodeBase64("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
}
inline std::string fakeKeyB64() {
  return encodeBase64("-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n");
}

// The shape of cmd/stunnerd/README.md: four listeners, ephemeral auth from the environment,
// camelCase "logLevel" and an unknown "realm" under admin (both as in STUNner's docs).
inline std::string stunnerdReadmeYaml() {
  return R"(version: v1
admin:
  name: my-stunnerd
  logLevel: all:DEBUG
  realm: "my-realm.example.com"
auth:
  type: ephemeral
  credentials:
    secret: $STUNNER_SHARED_SECRET
listeners:
  - name: stunnerd-udp
    address: "$STUNNER_ADDR"
    protocol: turn-udp
    port: 3478
    routes:
      - default/media-plane
  - name: stunnerd-tcp
    address: "$STUNNER_ADDR"
    protocol: turn-tcp
    port: 3478
    routes:
      - default/media-plane
  - name: stunnerd-tls
    address: "$STUNNER_ADDR"
    protocol: turn-tls
    port: 3479
    cert: ")" +
         fakeCertB64() + R"("
    key: ")" +
         fakeKeyB64() + R"("
    routes:
      - default/media-plane
  - name: stunnerd-dtls
    address: "$STUNNER_ADDR"
    protocol: turn-dtls
    port: 3479
    cert: ")" +
         fakeCertB64() + R"("
    key: ")" +
         fakeKeyB64() + R"("
    routes:
      - default/media-plane
clusters:
  - name: stunner/iperf-server
    protocol: UDP
    type: STATIC
    endpoints:
      - 127.0.0.1
)";
}

// The shape of deploy/manifests/stunner-iperf-test.conf: what the operator serves over CDS.
inline constexpr std::string_view kOperatorJson = R"({
  "version": "v1",
  "admin": {
    "name": "stunner-daemon",
    "loglevel": "all:INFO",
    "healthcheck_endpoint": "http://:8086"
  },
  "auth": {
    "type": "static",
    "realm": "stunner.l7mp.io",
    "credentials": {
      "password": "pass-1",
      "username": "user-1"
    }
  },
  "listeners": [
    {
      "name": "stunner/udp-gateway/udp-listener",
      "protocol": "TURN-UDP",
      "public_address": "35.205.10.190",
      "public_port": 3478,
      "address": "127.0.0.1",
      "port": 3478,
      "routes": ["stunner/iperf-server"]
    },
    {
      "name": "stunner/tcp-gateway/tcp-listener",
      "protocol": "TURN-TCP",
      "public_address": "35.187.97.94",
      "public_port": 3478,
      "address": "127.0.0.1",
      "port": 3478,
      "routes": ["stunner/iperf-server"]
    }
  ],
  "clusters": [
    {
      "name": "stunner/iperf-server",
      "type": "STATIC",
      "protocol": "UDP",
      "endpoints": ["0.0.0.0/0"]
    }
  ]
})";

// The smallest valid config, for tests that change one thing.
inline constexpr std::string_view kMinimalYaml = R"(version: v1
auth:
  credentials:
    username: user
    password: pass
)";

}  // namespace kturn::config::testing
