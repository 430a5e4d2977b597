#!/usr/bin/env bash
# Installs the Debian packages kturn needs, and nothing else on the machine changes.
#
#   install-deps.sh --build   what building kturnd (and kturn-operator, kturn-auth, kturnctl) needs:
#                             `make run`, and the images' build stage (deploy/docker/)
#   install-deps.sh           that, and what the test suite, its interop peers, the benchmarks
#                             and the end-to-end node need: `make test`
#
# Idempotent: packages already present are skipped, so a second run costs one dpkg query.
set -euo pipefail

build_packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config
  # libraries (DESIGN.md §5)
  libssl-dev libboost1.81-dev libboost-system1.81-dev nlohmann-json3-dev libyaml-cpp-dev
  libspdlog-dev libfmt-dev libcli11-dev zlib1g-dev
  # the eBPF fast path: clang compiles the program, libbpf loads it, bpftool makes its skeleton
  clang libbpf-dev bpftool
)

test_packages=(
  # `make format`
  clang-format
  # tests and benchmarks
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  # udp-forwarder --io-uring (bench/): the kernel-limit reference on io_uring
  liburing-dev
  # real peers for interop tests: coturn's turnutils_*, aioice
  coturn python3 python3-aioice python3-prometheus-client
  # real WebRTC for the browser interop test: headless Chromium, driven over its DevTools pipe
  # (tests/interop/browser.py, stdlib only: no chromedriver or selenium needed)
  chromium
  # the media server at the other end of the browser's audio/video call (tests/interop/
  # janus_test.py): Janus, its EchoTest plugin and HTTP API, run by the test in a namespace
  janus
  # bench/compare draws its saturation chart with matplotlib (Agg backend)
  python3-matplotlib
  # tests/deploy reads the CRDs and manifests with PyYAML; the test control plane
  # (tests/support/control_plane.py) makes its certificates with openssl
  python3-yaml openssl
  # tools the tests use
  iproute2 procps ethtool libcap2-bin
  # make test-e2e's node (tests/e2e/cluster.py) and images (scripts/build-images.sh): the
  # container runtime, its CNI plugins and kube-proxy's iptables; buildah and debootstrap build
  # kturn's images from its Dockerfiles on local base images, without a Docker engine
  containerd runc containernetworking-plugins iptables conntrack buildah skopeo debootstrap
  # make test-cluster's network (tests/e2e/fabric.py): the upstream router's BGP daemon; the
  # ipsets kube-router's NetworkPolicy rules match on
  bird2 ipset
  # make test-global (tests/e2e/globalnet.py): the clients' DNS lookups of GeoDNS
  bind9-dnsutils
)

case "${1:-}" in
  --build) packages=("${build_packages[@]}") ;;
  "") packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  *) echo "usage: $0 [--build]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Installing coturn on a machine that runs systemd also enables and starts its system
# turnserver on :3478, which `make run` wants. Only the service this run just installed is
# stopped: a coturn the user installed and runs is theirs, and the tests start their own
# turnservers on ports of their own.
if [[ " ${missing[*]} " == *" coturn "* ]] && [ -d /run/systemd/system ]; then
  $SUDO systemctl disable --now coturn >/dev/null 2>&1 || true
fi
# The same for bird2's system BIRD: make test-cluster runs its own, in a namespace of its own.
if [[ " ${missing[*]} " == *" bird2 "* ]] && [ -d /run/systemd/system ]; then
  $SUDO systemctl disable --now bird >/dev/null 2>&1 || true
fi
# And for janus's (HTTP API on :8088 of every address): the tests run their own Janus.
if [[ " ${missing[*]} " == *" janus "* ]] && [ -d /run/systemd/system ]; then
  $SUDO systemctl disable --now janus >/dev/null 2>&1 || true
fi
