#!/usr/bin/env bash
# Installs every Debian package kturn needs to build, test and run its interop peers.
# Idempotent: packages already present are skipped, so a second run costs one dpkg query.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config clang lld clang-format
  # libraries (DESIGN.md §5)
  libssl-dev libboost1.81-dev libboost-system1.81-dev nlohmann-json3-dev libyaml-cpp-dev
  libspdlog-dev libfmt-dev libcli11-dev zlib1g-dev
  # the eBPF fast path: libbpf, and bpftool for its skeleton (clang, above, compiles the program)
  libbpf-dev bpftool
  # tests and benchmarks
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  # udp-forwarder --io-uring (bench/): the kernel-limit reference on io_uring
  liburing-dev
  # real peers for interop tests: coturn's turnutils_*, aioice
  coturn python3 python3-aioice python3-prometheus-client
  # real WebRTC for the browser interop test: headless Chromium, driven over its DevTools pipe
  # (tests/interop/browser.py, stdlib only: no chromedriver or selenium needed)
  chromium
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
)

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
# The coturn package enables a system turnserver on :3478; kturn's tests and `make run` need
# that port, and the tests start their own turnserver by hand when they want one.
if command -v systemctl >/dev/null 2>&1; then
  $SUDO systemctl disable --now coturn >/dev/null 2>&1 || true
fi
pkill -x turnserver 2>/dev/null || true
