"""Interop test harness for kturnd (and coturn as a stand-in server).

Stdlib only (the aioice test imports aioice itself). Run the scripts with /usr/bin/python3; they
`import harness as h`, and this package re-exports the public names of its modules:

  * stun: a small STUN/TURN codec (long-term credentials, MESSAGE-INTEGRITY, FINGERPRINT), also
    used by tests/fuzz/gen_seeds.py;
  * turn_client: a synchronous TURN client over UDP, and over TCP or TLS, and the STUN Binding
    readiness probe;
  * servers: KturndServer / CoturnServer, context managers that start a server on loopback with
    the same settings, wait until it answers a STUN Binding request, and kill its whole process
    group at the end;
  * procs: Proc, which runs servers and helper processes (turnutils_peer, turnutils_uclient)
    with their output in log files that are printed when a test fails;
  * net: free ports, relay port windows, network namespaces;
  * runner: run_test(), the common main() wrapper (argument parsing, temp dir, exit code,
    cleanups, log dump), TestFailure / check(), and register_cleanup() / register_log().

Network safety: every address used here is 127.0.0.1 (or 127.0.0.2 for the refused peer);
every loop is bounded in count and time.
"""

from .net import (LOOPBACK, LOOPBACK6, RESERVED_PORTS, PodNetwork, ThreeNamespaces, family_of,
                  free_port, free_udp_port_pair, in_netns, relay_port_range, root_or_skip)
from .procs import Proc, start_udp_echo_peer
from .runner import TestFailure, check, register_cleanup, register_log, run_test
from .servers import (REALM, REST_SECRET, STATIC_PASS, STATIC_USER, CoturnServer, KturndServer,
                      Server, ServerSettings, add_server_args, base64_file, ca_signed_certs,
                      make_server, self_signed_cert, to_yaml)
from .stun import (
    A_ADDITIONAL_ADDRESS_FAMILY, A_ADDRESS_ERROR_CODE, A_ALTERNATE_DOMAIN, A_ALTERNATE_SERVER,
    A_BANDWIDTH, A_CHANNEL_NUMBER, A_CONNECTION_ID, A_DATA, A_DONT_FRAGMENT, A_ERROR_CODE,
    A_EVEN_PORT, A_FINGERPRINT, A_ICE_CONTROLLED, A_ICE_CONTROLLING, A_ICMP, A_LIFETIME,
    A_MAPPED_ADDRESS, A_MESSAGE_INTEGRITY, A_MESSAGE_INTEGRITY_SHA256, A_NONCE,
    A_OAUTH_ACCESS_TOKEN, A_ORIGIN, A_OTHER_ADDRESS, A_PADDING, A_PASSWORD_ALGORITHM,
    A_PASSWORD_ALGORITHMS, A_PRIORITY, A_REALM, A_REQUESTED_ADDRESS_FAMILY,
    A_REQUESTED_TRANSPORT, A_RESERVATION_TOKEN, A_RESPONSE_ORIGIN, A_RESPONSE_PORT, A_SOFTWARE,
    A_THIRD_PARTY_AUTHORIZATION, A_UNKNOWN_ATTRIBUTES, A_USE_CANDIDATE, A_USERHASH, A_USERNAME,
    A_XOR_MAPPED_ADDRESS, A_XOR_PEER_ADDRESS, A_XOR_RELAYED_ADDRESS, ALLOCATE, ATTR_NAMES, BINDING,
    CHANNEL_BIND, CLASS_NAMES, CREATE_PERMISSION, DATA, ERROR, FINGERPRINT_XOR, INDICATION,
    MAGIC_COOKIE, METHOD_NAMES, REFRESH, REQUEST, SEND, SUCCESS, StunMessage, is_channel_data,
    long_term_key, pack_xor_address, rest_credentials, unpack_address, unpack_xor_address)
from .turn_client import StreamTurnClient, TurnClient, insecure_tls, stun_binding_probe
