#!/usr/bin/env bash
# Builds the test tools that kturn's Kubernetes tests run: the real control plane (etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler), kubectl, Helm, and the Gateway API
# CRDs; a node's kubelet and kube-proxy, and CoreDNS, for the single-node cluster of make test-e2e
# (tests/e2e/cluster.py; containerd, runc and the CNI plugins are Debian's); STUNner's stunnerd
# and turncat, the reference that the interop tests and bench/compare hold kturn against; and,
# where ../shared/reference/ is beside the checkout, STUNner's gateway operator, auth service and
# Helm chart from the released sources there. They are test tools only: never shipped, never
# vendored, nothing of them is committed; except that the Helm chart ships the Gateway API CRDs of
# GATEWAY_API_VERSION, which scripts/update-gateway-api-crds.sh copies from here.
#
#   scripts/build-test-tools.sh [--link DIR] [--cluster]
#
# --cluster also builds what the multi-node cluster of make test-cluster runs on its nodes
# (tests/e2e/cluster.py --nodes N): kube-router (the pod network and NetworkPolicy) and MetalLB's
# controller and speaker (LoadBalancer addresses, announced by BGP).
#
# Each tool is built from its own Go module at a pinned release, with the ordinary Go client, into
# a cache outside the repository keyed by version and by the hash of the module files that pin it
# (tests/tools/*/go.{mod,sum}), so a second run costs a few checks. --link DIR makes DIR/bin and
# DIR/crds point at this checkout's versions (the build directory's test-tools/, for ctest).
#
# KTURN_TOOLS_DIR overrides the cache (default ~/.cache/kturn-test-tools), KTURN_REFERENCE_DIR the
# folder of STUNner's released sources (default ../shared/reference beside the checkout). Nothing
# here downloads a binary or a toolchain: Go modules come from the module proxy and are compiled
# here (GOTOOLCHAIN=local: the installed Go builds them or the script stops).
set -euo pipefail

KUBERNETES_VERSION=v1.36.3  # tests/tools/kubernetes/go.mod pins the same release
ETCD_VERSION=v3.6.8         # the etcd Kubernetes v1.36.3 is tested with; tests/tools/etcd/go.mod
HELM_VERSION=v4.3.2
COREDNS_VERSION=v1.14.2     # the cluster DNS of the e2e node (its own go.mod and go.sum pin it)
GATEWAY_API_VERSION=v1.6.3
# The module proxy serves neither github.com/l7mp/stunner-gateway-operator nor
# github.com/l7mp/stunner-auth-service ("403 Forbidden ... This module version is not available"):
# their released sources come from REFERENCE_DIR instead (its README gives each tarball's tag and
# sha256), their dependencies from the module proxy. A cache folder is keyed by its tarball's hash.
STUNNER_OPERATOR_TARBALL=stunner-gateway-operator-v1.2.1.tar.gz
STUNNER_AUTH_TARBALL=stunner-auth-service-v1.1.0.tar.gz
STUNNER_HELM_TARBALL=stunner-helm-4c6736e.tar.gz
STUNNER_VERSION=v1.2.1  # tests/tools/stunner/go.mod pins the same release
# make test-cluster's nodes (--cluster). kube-router v2.1.0 is the only release the module proxy
# serves (v2.1.1 and later: "not available"); tests/e2e/kuberouter.py says what that costs.
KUBE_ROUTER_VERSION=v2.1.0
METALLB_VERSION=v0.15.2    # tests/tools/metallb/go.mod pins the same release

top=$(cd "$(dirname "$0")/.." && pwd)
REFERENCE_DIR=${KTURN_REFERENCE_DIR:-$top/../shared/reference}
cache=${KTURN_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kturn-test-tools}
link=""
cluster=0
while (($#)); do
  case "$1" in
    --link) link=$2; shift 2 ;;
    --cluster) cluster=1; shift ;;
    *) echo "usage: $0 [--link DIR] [--cluster]" >&2; exit 2 ;;
  esac
done

export GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0

say() { echo "build-test-tools: $*" >&2; }

# The machine's Go, needed only when something is to be built (this project's machines come with
# a current one in /usr/local/go; Debian's golang package is too old for these releases).
need_go() {
  command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
  command -v go >/dev/null || { say "Go is not installed (needed to build the test tools)"
    exit 1; }
}

# key NAME VERSION [FILES...]: the cache folder of one tool build.
key() {
  local name=$1 version=$2
  shift 2
  local h=""
  (($#)) && h=-$(cat "$@" | sha256sum | cut -c1-12)
  echo "$cache/$name-$version$h"
}

# built DIR: whether DIR holds a finished build (its stamp is written last).
built() { [ -f "$1/.complete" ]; }

# build_into DIR COMMAND...: runs COMMAND (which writes DIR/bin) and stamps DIR, timing it.
build_into() {
  local dir=$1
  shift
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp/bin"
  local start=$SECONDS
  need_go
  OUT="$dir.tmp/bin" "$@"
  touch "$dir.tmp/.complete"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
  say "$(basename "$dir") built in $((SECONDS - start)) s"
}

k8s_minor=${KUBERNETES_VERSION#v1.}
k8s_minor=${k8s_minor%%.*}
build_kubernetes() {
  local flags=""
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    flags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$k8s_minor"
    flags+=" -X $pkg.gitTreeState=clean"
  done
  (cd "$top/tests/tools/kubernetes" && go build -trimpath -ldflags "-s -w$flags" -o "$OUT/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy)
}

build_etcd() {
  (cd "$top/tests/tools/etcd" && go build -trimpath -ldflags "-s -w" -o "$OUT/etcd" \
    go.etcd.io/etcd/server/v3)
}

build_helm() {
  # Helm has no replace directives, so its own go.mod and go.sum pin everything.
  GOBIN=$OUT go install -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
    "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"
}

build_coredns() {
  # CoreDNS has no replace directives: its own go.mod and go.sum pin everything.
  GOBIN=$OUT go install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION"
}

# Through tests/tools/stunner/go.mod, not `go install`: see the comment there. The version is
# what stunnerd logs at startup.
build_stunner() {
  (cd "$top/tests/tools/stunner" && go build -trimpath \
    -ldflags "-s -w -X main.version=$STUNNER_VERSION" -o "$OUT/" \
    github.com/l7mp/stunner/cmd/stunnerd github.com/l7mp/stunner/cmd/turncat)
}

# build_reference TARBALL PACKAGE BINARY: a Go program from a released source tarball of
# REFERENCE_DIR, built with the go.mod and go.sum it was released with (-mod=readonly: nothing
# resolved anew). The source is unpacked in a scratch folder beside the output and removed.
build_reference() {
  local src=$OUT/../src
  mkdir -p "$src"
  tar xzf "$REFERENCE_DIR/$1" -C "$src" --strip-components=1
  (cd "$src" && go build -trimpath -ldflags "-s -w" -o "$OUT/$3" "$2")
  rm -rf "$src"
}
build_stunner_operator() {
  build_reference "$STUNNER_OPERATOR_TARBALL" . stunner-gateway-operator
}
build_stunner_auth() { build_reference "$STUNNER_AUTH_TARBALL" . stunner-auth-server; }
# The chart is not built: unpacked, for helm template and helm install (its CRD subcharts in it).
unpack_stunner_helm() {
  tar xzf "$REFERENCE_DIR/$STUNNER_HELM_TARBALL" -C "$OUT/.." --strip-components=1
}

# kube-router has no replace directives: its own go.mod and go.sum pin everything.
build_kube_router() {
  GOBIN=$OUT go install -trimpath -ldflags \
    "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$KUBE_ROUTER_VERSION" \
    "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$KUBE_ROUTER_VERSION"
}

# Through tests/tools/metallb/go.mod (it says why), with MetalLB's CRDs beside the binaries.
build_metallb() {
  (cd "$top/tests/tools/metallb" &&
    go build -trimpath -ldflags "-s -w" -o "$OUT/metallb-controller" \
      go.universe.tf/metallb/controller &&
    go build -trimpath -ldflags "-s -w" -o "$OUT/metallb-speaker" go.universe.tf/metallb/speaker)
  local src
  src=$(cd "$top/tests/tools/metallb" && go list -m -f '{{.Dir}}' go.universe.tf/metallb)
  mkdir -p "$OUT/../crds"
  cp "$src"/config/crd/bases/*.yaml "$OUT/../crds/"
  chmod -R u+w "$OUT/../crds"
}

# The Gateway API CRDs are YAML inside the sigs.k8s.io/gateway-api module: the standard channel,
# and the experimental one for what kturn serves beyond it (UDPRoute v1alpha2, TCPRoute).
build_gateway_api() {
  local src
  src=$(cd /tmp && go mod download -json "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION" |
    sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -d "$src/config/crd/standard" ] || { say "gateway-api module has no config/crd"; return 1; }
  mkdir -p "$OUT/../standard" "$OUT/../experimental"
  cp "$src"/config/crd/standard/gateway.networking.k8s.io_*.yaml "$OUT/../standard/"
  cp "$src"/config/crd/experimental/gateway.networking.k8s.io_*.yaml "$OUT/../experimental/"
  # Admission policies are not CRDs; the test control plane installs CRDs only.
  rm -f "$OUT"/../*/gateway.networking.k8s.io_vap_*.yaml
  chmod -R u+w "$OUT/.."
}

kube_dir=$(key kubernetes "$KUBERNETES_VERSION" "$top"/tests/tools/kubernetes/go.{mod,sum})
etcd_dir=$(key etcd "$ETCD_VERSION" "$top"/tests/tools/etcd/go.{mod,sum})
helm_dir=$(key helm "$HELM_VERSION")
coredns_dir=$(key coredns "$COREDNS_VERSION")
gwapi_dir=$(key gateway-api "$GATEWAY_API_VERSION")
stunner_dir=$(key stunner "$STUNNER_VERSION" "$top"/tests/tools/stunner/go.{mod,sum})

built "$etcd_dir" || { say "building etcd $ETCD_VERSION"; build_into "$etcd_dir" build_etcd; }
built "$helm_dir" || { say "building helm $HELM_VERSION"; build_into "$helm_dir" build_helm; }
built "$gwapi_dir" || build_into "$gwapi_dir" build_gateway_api
built "$coredns_dir" || {
  say "building coredns $COREDNS_VERSION"
  build_into "$coredns_dir" build_coredns
}
built "$stunner_dir" || {
  say "building stunnerd, turncat $STUNNER_VERSION"
  build_into "$stunner_dir" build_stunner
}
reference=0
if [ -f "$REFERENCE_DIR/$STUNNER_OPERATOR_TARBALL" ]; then
  reference=1
  ref_key() { key "$1" "$(basename "$2" .tar.gz | sed 's/.*-//')" "$REFERENCE_DIR/$2"; }
  operator_dir=$(ref_key stunner-gateway-operator "$STUNNER_OPERATOR_TARBALL")
  auth_dir=$(ref_key stunner-auth-service "$STUNNER_AUTH_TARBALL")
  stunner_helm_dir=$(ref_key stunner-helm "$STUNNER_HELM_TARBALL")
  built "$operator_dir" || {
    say "building STUNner's gateway operator from $STUNNER_OPERATOR_TARBALL (cold: about 5 minutes)"
    build_into "$operator_dir" build_stunner_operator
  }
  built "$auth_dir" || {
    say "building STUNner's auth service from $STUNNER_AUTH_TARBALL"
    build_into "$auth_dir" build_stunner_auth
  }
  built "$stunner_helm_dir" || build_into "$stunner_helm_dir" unpack_stunner_helm
else
  say "no $REFERENCE_DIR/$STUNNER_OPERATOR_TARBALL: STUNner's operator, auth service and chart" \
    "are not built, and the tests that compare kturn with them will skip"
fi
if ((cluster)); then
  kube_router_dir=$(key kube-router "$KUBE_ROUTER_VERSION")
  metallb_dir=$(key metallb "$METALLB_VERSION" "$top"/tests/tools/metallb/go.{mod,sum})
  built "$kube_router_dir" || {
    say "building kube-router $KUBE_ROUTER_VERSION"
    build_into "$kube_router_dir" build_kube_router
  }
  built "$metallb_dir" || {
    say "building MetalLB's controller and speaker $METALLB_VERSION"
    build_into "$metallb_dir" build_metallb
  }
fi
built "$kube_dir" || {
  say "building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kubelet," \
    "kube-proxy $KUBERNETES_VERSION (cold: about 12 minutes on 2 cores)"
  build_into "$kube_dir" build_kubernetes
}

if [ -n "$link" ]; then
  mkdir -p "$link/bin"
  for b in "$kube_dir"/bin/* "$etcd_dir/bin/etcd" "$helm_dir/bin/helm" "$coredns_dir/bin/coredns" \
    "$stunner_dir"/bin/*; do
    ln -sfn "$b" "$link/bin/$(basename "$b")"
  done
  if ((cluster)); then
    for b in "$kube_router_dir"/bin/* "$metallb_dir"/bin/*; do
      ln -sfn "$b" "$link/bin/$(basename "$b")"
    done
    ln -sfn "$metallb_dir" "$link/metallb"
  fi
  ln -sfn "$gwapi_dir" "$link/gateway-api"
  if ((reference)); then
    ln -sfn "$operator_dir/bin/stunner-gateway-operator" "$link/bin/stunner-gateway-operator"
    ln -sfn "$auth_dir/bin/stunner-auth-server" "$link/bin/stunner-auth-server"
    ln -sfn "$stunner_helm_dir/helm/stunner" "$link/stunner-helm"
  else
    rm -f "$link/bin/stunner-gateway-operator" "$link/bin/stunner-auth-server" \
      "$link/stunner-helm"
  fi
  {
    echo "KUBERNETES_VERSION=$KUBERNETES_VERSION"
    echo "ETCD_VERSION=$ETCD_VERSION"
    echo "HELM_VERSION=$HELM_VERSION"
    echo "COREDNS_VERSION=$COREDNS_VERSION"
    echo "GATEWAY_API_VERSION=$GATEWAY_API_VERSION"
    echo "STUNNER_VERSION=$STUNNER_VERSION"
    if ((reference)); then
      echo "STUNNER_OPERATOR_SOURCE=$STUNNER_OPERATOR_TARBALL"
      echo "STUNNER_AUTH_SOURCE=$STUNNER_AUTH_TARBALL"
      echo "STUNNER_HELM_SOURCE=$STUNNER_HELM_TARBALL"
    fi
    if ((cluster)); then
      echo "KUBE_ROUTER_VERSION=$KUBE_ROUTER_VERSION"
      echo "METALLB_VERSION=$METALLB_VERSION"
    fi
  } >"$link/versions.env"
fi
