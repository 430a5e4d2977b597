#!/usr/bin/env bash
# Regenerates deploy/manifests/kturn.yaml from the Helm chart with the real Helm (built by
# scripts/build-test-tools.sh; `make manifests` builds it first). --stdout prints what the file
# must hold instead (tests/deploy/chart_test.py compares the two).
#
#   scripts/update-manifests.sh [--stdout]        HELM=path/to/helm overrides the tool
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
helm=${HELM:-$top/build/test-tools/bin/helm}
[ -x "$helm" ] || { echo "update-manifests: no helm at $helm (make test-tools)" >&2; exit 1; }

# Without the Gateway API CRDs (standardCrds.enabled=false): a plain manifest has no switch to
# leave them out where the cluster already has its own (a managed Gateway API, another
# controller's, Argo CD's), and `kubectl apply` would overwrite those. docs/kubernetes.md applies
# the chart's copy of them as a step of its own.
render() {
  cat <<'HEADER'
# kturn: operator, config discovery, auth service, RBAC, kturn's CRDs and the default Dataplane;
# not the Gateway API CRDs (docs/kubernetes.md installs them first, from the chart's subchart).
# Generated from the Helm chart deploy/helm/kturn; do not edit. Regenerate with
#   make manifests
# which writes what
#   helm template kturn deploy/helm/kturn -n kturn-system --include-crds --set namespace.create=true \
#     --set standardCrds.enabled=false
# prints. Install: kubectl apply -f deploy/manifests/kturn.yaml (docs/kubernetes.md).
HEADER
  # Helm notes a symlinked crds/ on stderr; the chart's crds/ is one on purpose.
  (cd "$top" && "$helm" template kturn deploy/helm/kturn -n kturn-system --include-crds \
    --set namespace.create=true --set standardCrds.enabled=false 2>/dev/null)
}

if [ "${1:-}" = "--stdout" ]; then
  render
else
  render >"$top/deploy/manifests/kturn.yaml.tmp"
  mv "$top/deploy/manifests/kturn.yaml.tmp" "$top/deploy/manifests/kturn.yaml"
fi
