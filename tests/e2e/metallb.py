"""MetalLB for the multi-node cluster (tests/e2e/cluster.py --nodes N): the LoadBalancer
implementation the seed names for clusters without a cloud, in BGP mode. Its controller gives a
LoadBalancer Service an address from a pool (fabric.Site.pools) and writes it into the Service's
status; a speaker on each node announces that address to the upstream router (fabric.py's BIRD)
while the node holds a ready endpoint of the Service (externalTrafficPolicy: Local), and
withdraws it when it no longer does.

They run as processes, as their pods would (the controller on the host, a speaker in each node's
network namespace, like its hostNetwork DaemonSet pod), with MetalLB's native BGP speaker (it
dials the router, never listens: kube-router's mesh on the same nodes is on another port) and
no webhook (--webhook-mode=disabled). A speaker reads its own Pod object at start (it owns the
speaker's status objects): each gets a Pod that never runs, held back by a scheduling gate.

Built by scripts/build-test-tools.sh --cluster (v0.15.2, tests/tools/metallb/go.mod says why).
"""

from __future__ import annotations

import glob
import os
import subprocess
from typing import TYPE_CHECKING, Callable, List

import yaml

import control_plane as cp
import fabric

if TYPE_CHECKING:
    from cluster import Node

NAMESPACE = "metallb-system"
HOLD_TIME = "9s"  # the router's too: a node that stops answering loses its routes in 9 s


def rbac() -> List[dict]:
    """What MetalLB's own manifests grant its controller and speaker (config/rbac), less what
    only the webhook, memberlist and FRR mode use; the subjects are the users of their client
    certificates."""
    def cluster_role(name: str, rules: List[dict], user: str) -> List[dict]:
        return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                 "metadata": {"name": name}, "rules": rules},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                 "metadata": {"name": name},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                             "name": name},
                 "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                               "name": user}]}]

    read = ["get", "list", "watch"]
    config = {"apiGroups": ["metallb.io"],
              "resources": ["bfdprofiles", "bgppeers", "l2advertisements", "bgpadvertisements",
                            "ipaddresspools", "communities"], "verbs": read}
    events = {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}
    local = [{"apiGroups": [""], "resources": ["secrets", "configmaps"], "verbs": read},
             {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}, config]
    docs = cluster_role("kturn-metallb-controller", [
        {"apiGroups": [""], "resources": ["services", "namespaces"], "verbs": read},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["services/status"], "verbs": ["update"]},
        {"apiGroups": ["metallb.io"], "resources": ["ipaddresspools/status"],
         "verbs": ["update"]},
        events, *local], "metallb-controller")
    docs += cluster_role("kturn-metallb-speaker", [
        {"apiGroups": [""], "resources": ["services", "endpoints", "nodes", "namespaces"],
         "verbs": read},
        {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": read},
        {"apiGroups": ["metallb.io"],
         "resources": ["servicel2statuses", "servicel2statuses/status", "servicebgpstatuses",
                       "servicebgpstatuses/status"], "verbs": ["*"]},
        events, *local], "metallb-speaker")
    return docs


def config(site: fabric.Site = fabric.DEFAULT) -> List[dict]:
    """The site's pools, its router as every node's BGP peer, and the pools announced by BGP. A
    pool that does not auto-assign (a region's Anycast address) goes only to a Service that asks
    for one of its addresses."""
    meta = {"namespace": NAMESPACE}
    pools = [{"apiVersion": "metallb.io/v1beta1", "kind": "IPAddressPool",
              "metadata": {"name": name, **meta},
              "spec": {"addresses": [cidr], "autoAssign": auto}}
             for name, cidr, auto in site.pools]
    return pools + [
        {"apiVersion": "metallb.io/v1beta2", "kind": "BGPPeer",
         "metadata": {"name": "upstream", **meta},
         "spec": {"myASN": site.node_asn, "peerASN": site.router_asn,
                  "peerAddress": site.router_lan_ip, "holdTime": HOLD_TIME}},
        {"apiVersion": "metallb.io/v1beta1", "kind": "BGPAdvertisement",
         "metadata": {"name": "upstream", **meta},
         "spec": {"ipAddressPools": [name for name, _, _ in site.pools]}},
    ]


def fix_asn_format(node):
    """MetalLB v0.15's BGPPeer CRD declares its AS numbers `format: int32` with `maximum:
    4294967295`, which the API server of Kubernetes v1.36 refuses when it validates a BGPPeer
    ("Maximum boundary value must be of type integer with format int32"); later MetalLB
    releases declare them int64. The schema is corrected here, where it is installed."""
    if isinstance(node, dict):
        if node.get("format") == "int32" and node.get("maximum", 0) > 2**31 - 1:
            node["format"] = "int64"
        for v in node.values():
            fix_asn_format(v)
    elif isinstance(node, list):
        for v in node:
            fix_asn_format(v)
    return node


def placeholder_pod(name: str) -> dict:
    """A Pod for a speaker to find itself by: it never runs (a scheduling gate nobody lifts),
    and nothing collects it."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"schedulingGates": [{"name": "kturn.io/runs-outside-the-cluster"}],
                     "automountServiceAccountToken": False,
                     "containers": [{"name": "speaker", "image": "metallb/speaker"}]}}


def install(plane: cp.ControlPlane, identity: Callable[[str, str], str],
            site: fabric.Site = fabric.DEFAULT) -> cp.Component:
    """MetalLB's CRDs, RBAC and configuration, and its controller (on the host)."""
    crds = sorted(glob.glob(os.path.join(plane.tools, "metallb", "crds", "*.yaml")))
    if not crds:
        raise RuntimeError(f"no MetalLB CRDs in {plane.tools}/metallb/crds: run "
                           "scripts/build-test-tools.sh --cluster --link with this folder")
    docs = []
    for path in crds:
        with open(path) as f:
            docs += [fix_asn_format(d) for d in yaml.safe_load_all(f) if d]
    plane.apply(docs + [{"apiVersion": "v1", "kind": "Namespace",
                                  "metadata": {"name": NAMESPACE}}] + rbac())
    cp.wait_until("the CRDs established", lambda: subprocess.run(
        [os.path.join(plane.tools, "bin", "kubectl"), "--kubeconfig", plane.kubeconfig, "wait",
         "--for", "condition=Established", "--timeout", "1s", "crd", "--all"],
        capture_output=True).returncode == 0, plane.components, 30)
    plane.apply(config(site))
    # The speakers' Pods need the namespace's default ServiceAccount (admission checks it).
    cp.wait_until(f"the {NAMESPACE} ServiceAccount", lambda: cp.api(
        plane.url, plane.pki, "GET", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default"),
        plane.components, 60)
    kubeconfig = identity("metallb-controller", "/CN=metallb-controller")
    c = cp.Component("metallb-controller", [
        os.path.join(plane.tools, "bin", "metallb-controller"), "--kubeconfig", kubeconfig,
        "--namespace", NAMESPACE, "--webhook-mode=disabled", "--disable-cert-rotation",
        "--port", str(cp.free_port()), "--log-level", "info"], plane.logs)
    c.start()
    return c


def speaker(node: "Node") -> None:
    """The node's speaker, in its network namespace: it peers with the router from the node's
    address."""
    pod = f"speaker-{node.spec.name}"
    node.plane.apply([placeholder_pod(pod)])
    kubeconfig = node.identity("metallb-speaker", "/CN=metallb-speaker")
    node.start_component("metallb-speaker", [
        node.tool("metallb-speaker"), "--kubeconfig", kubeconfig, "--namespace", NAMESPACE,
        "--node-name", node.spec.name, "--pod-name", pod, "--port", "7472",
        "--log-level", "info"])
