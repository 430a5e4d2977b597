#!/usr/bin/env bash
# make test-global: kturn in two regions behind one Anycast address and GeoDNS, clients on two
# continents (tests/e2e/global_test.py; docs/operations.md#many-regions).
#
#   tests/e2e/run-global.sh [BUILD_DIR]
#
# 1. the test tools, with the nodes' kube-router and MetalLB (scripts/build-test-tools.sh
#    --cluster; cached);
# 2. kturn's images (scripts/build-images.sh; cached);
# 3. the network between the regions (tests/e2e/globalnet.py up): the continents' routers, their
#    clients, the data centre with GeoDNS and the media echo;
# 4. region a (2 nodes) and region b (1 node), each a cluster of its own
#    (tests/e2e/cluster.py up --site a|b) whose router peers with its continent's;
# 5. the test (with the build's kturn-auth, serving both regions from the data centre);
# 6. all of it taken down, also when a step failed or the run was interrupted.
#
# Root: the nodes need it. Each step prints its time.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(realpath -m "${1:-$top/build}")
dir=$build/global
cd "$top"

((EUID == 0)) || { echo "test-global: the nodes need root" >&2; exit 77; }

run=test-global
# shellcheck source=tests/e2e/steps.sh
source tests/e2e/steps.sh

down_all() {
  local rc=$?
  for region in b a; do
    step "region $region down" python3 tests/e2e/cluster.py down --dir "$dir/$region" || rc=1
  done
  step "network down" python3 tests/e2e/globalnet.py down --dir "$dir/net" || rc=1
  echo "$run: $( ((rc == 0)) && echo passed || echo FAILED) in $SECONDS s" >&2
  exit "$rc"
}

step "test tools" bash scripts/build-test-tools.sh --link "$build/test-tools" --cluster
step "images" bash scripts/build-images.sh --out "$build/images"
mkdir -p "$dir"
trap down_all EXIT
trap 'exit 130' INT TERM
step "network up" python3 tests/e2e/globalnet.py up --dir "$dir/net" --tools "$build/test-tools" \
  --owner $$
for region in a b; do
  nodes=2
  [[ $region == b ]] && nodes=1
  step "region $region up" python3 tests/e2e/cluster.py up --dir "$dir/$region" --site "$region" \
    --nodes "$nodes" --tools "$build/test-tools" --images "$build/images" --owner $$
done
step "test" /usr/bin/python3 tests/e2e/global_test.py --dir "$dir" --kturn-auth "$build/kturn-auth"
