#!/usr/bin/env bash
# make test-cluster: kturn on a multi-node cluster on this machine, reached through a BGP router
# from a client network, as a platform team runs it (tests/e2e/cluster_test.py).
#
#   tests/e2e/run-cluster.sh [BUILD_DIR] [NODES]
#
# 1. the test tools, with the nodes' kube-router and MetalLB (scripts/build-test-tools.sh
#    --cluster; cached);
# 2. kturn's images and the media server's (scripts/build-images.sh; cached);
# 3. the cluster (tests/e2e/cluster.py up --nodes NODES, default 3): the router, the client
#    network, the control plane and the nodes, each in network namespaces of its own;
# 4. the test (tests/e2e/cluster_test.py);
# 5. the cluster taken down, also when a step failed or the run was interrupted.
#
# Root: the nodes need it. Each step prints its time.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(realpath -m "${1:-$top/build}")
nodes=${2:-3}
cluster=$build/cluster
cd "$top"

((EUID == 0)) || { echo "test-cluster: the nodes need root" >&2; exit 77; }

run=test-cluster
# shellcheck source=tests/e2e/steps.sh
source tests/e2e/steps.sh

step "test tools" bash scripts/build-test-tools.sh --link "$build/test-tools" --cluster
step "images" bash scripts/build-images.sh --out "$build/images"
trap down EXIT
trap 'exit 130' INT TERM
step "cluster up" python3 tests/e2e/cluster.py up --dir "$cluster" --tools "$build/test-tools" \
  --images "$build/images" --nodes "$nodes" --owner $$
step "cluster test" /usr/bin/python3 tests/e2e/cluster_test.py --cluster "$cluster"
