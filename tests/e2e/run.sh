#!/usr/bin/env bash
# make test-e2e: source document 000's example on a real single-node cluster on this machine.
#
#   tests/e2e/run.sh [BUILD_DIR]
#
# 1. the test tools (scripts/build-test-tools.sh: the control plane, kubelet, kube-proxy, CoreDNS,
#    Helm; cached);
# 2. kturn's images from its Dockerfiles and the media server's (scripts/build-images.sh; cached
#    base images and layers), and kturnd under a second tag for the rolling update;
# 3. the cluster (tests/e2e/cluster.py up), its images imported into the node's containerd;
# 4. the test (tests/e2e/e2e_test.py);
# 5. the cluster taken down, also when a step failed or the run was interrupted: every process,
#    mount, network namespace, interface, iptables rule and sysctl it made or changed.
#
# Root: the node needs it. Each step prints its time.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(realpath -m "${1:-$top/build}")
cluster=$build/e2e
cd "$top"

((EUID == 0)) || { echo "test-e2e: the node needs root" >&2; exit 77; }

run=test-e2e
# shellcheck source=tests/e2e/steps.sh
source tests/e2e/steps.sh

step "test tools" bash scripts/build-test-tools.sh --link "$build/test-tools"
step "images" bash scripts/build-images.sh --out "$build/images"
# The tag the test rolls the kturnd Deployment to (e2e_test.py NEW_TAG).
step "images (kturnd, rollout tag)" bash scripts/build-images.sh --out "$build/images" \
  --tag 0.1.1 kturnd
trap down EXIT
trap 'exit 130' INT TERM
step "cluster up" python3 tests/e2e/cluster.py up --dir "$cluster" --tools "$build/test-tools" \
  --images "$build/images" --owner $$
step "e2e test" /usr/bin/python3 tests/e2e/e2e_test.py --cluster "$cluster" \
  --bench "$build/bench/kturn-bench"
