// Configs kturnd builds itself rather than reads.
#pragma once

#include <string>
#include <string_view>

#include "config/stunner_config.h"
#include "kturn/result.h"

namespace kturn::config {

// kturnd's embedded default (`make run`): admin.name "kturnd"; listener "default-listener",
// TURN-UDP on 127.0.0.1:3478; ephemeral auth in realm "stunner.l7mp.io" with the given shared
// secret; cluster "default-cluster" (STATIC, UDP) admitting loopback peers only, 127.0.0.0/8 and
// ::1/128, routed from the listener. Already validated.
StunnerConfig makeDefaultConfig(std::string secret);

// The one-shot config stunnerd builds when its config origin is a TURN URI
// (stunner config.go NewDefaultConfig), e.g. `turn://user:pass@127.0.0.1:3478?transport=udp`:
// static auth with the URI's username and password (both required) in the default realm;
// one listener "default-listener" with the URI's protocol, host and port; one cluster
// "allow-any", STATIC, endpoint 0.0.0.0/0, routed from it (any IPv4 peer: stunnerd's choice,
// kept). A TLS or DTLS URI gets a fresh self-signed certificate for "localhost". Validated.
// Unlike stunnerd, the host must be an IP literal (IPv6 allowed); kturn does not resolve names
// while building a config.
Result<StunnerConfig> configFromTurnUri(std::string_view uri);

}  // namespace kturn::config
