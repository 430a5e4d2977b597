"""kube-router on each node of the multi-node cluster (tests/e2e/cluster.py --nodes N): the pod
network and NetworkPolicy, as a process in the node's network namespace (as its DaemonSet runs it
with hostNetwork).

Why kube-router: this machine's kernel has iptables, ipset and the bridge's netfilter hooks, but
neither IPVS nor nftables' queue verdict nor IPIP, which rules out Cilium's and Calico's eBPF
paths, kube-network-policies (nfqueue) and overlays; kube-router's NetworkPolicy is iptables and
ipset, its pod network a bridge (Debian's CNI bridge plugin) plus routes to the other nodes'
pod ranges that it learns over iBGP between the nodes. kube-proxy stays the service proxy
(--run-service-proxy=false), as on the single-node cluster. v2.1.0 is the only release the Go
module proxy serves (scripts/build-test-tools.sh --cluster builds it).

Its BGP mesh runs on port 1790, so that it never meets MetalLB's speakers, which peer with the
upstream router on 179, and it has no external peer: the router learns LoadBalancer addresses
from MetalLB only.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import control_plane as cp

if TYPE_CHECKING:
    from cluster import Node

CNI_CONF = "10-kuberouter.conflist"
BGP_PORT = 1790  # the nodes' iBGP mesh; MetalLB's speakers use 179 towards the router
ASN = 64520  # the nodes' own AS for the mesh (not the one MetalLB's speakers announce from)


def cni_config(node_dir: str) -> str:
    """The CNI configuration kube-router completes: it adds the node's pod range (from
    node.spec.podCIDR) to the bridge plugin's IPAM and its MTU, and leaves the rest."""
    return json.dumps({
        "cniVersion": "0.3.1", "name": "kubernetes",
        "plugins": [
            {"type": "bridge", "bridge": "kube-bridge", "isDefaultGateway": True,
             "hairpinMode": True,
             # The address reservations of each node apart (the mount namespace is shared).
             "ipam": {"type": "host-local", "dataDir": os.path.join(node_dir, "cni-ipam")}},
            {"type": "portmap", "capabilities": {"snat": True, "portMappings": True}},
        ],
    }, indent=1)


def install(plane: cp.ControlPlane) -> None:
    """kube-router's RBAC, as its DaemonSet's ClusterRole has it (read only: it writes
    nothing to the API without its load balancer allocator)."""
    plane.apply([{
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "kube-router"},
        "rules": [
            {"apiGroups": [""], "resources": ["nodes", "pods", "services", "endpoints",
                                              "namespaces"],
             "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"],
             "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
             "verbs": ["get", "list", "watch"]}]}, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "kube-router"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "kube-router"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                      "name": "kube-router"}]}])

def start(node: "Node") -> None:
    """kube-router on `node`: the caller waited for the node's pod range (without one,
    kube-router exits)."""
    kubeconfig = node.identity("kube-router", "/CN=kube-router")
    conf = os.path.join(node.dir, "cni", CNI_CONF)
    node.start_component("kube-router", [
        # v2.1.0 takes the node's name from NODE_NAME before --hostname-override, and before
        # that from the host name (the machine's: only the network namespace is the node's).
        "env", f"NODE_NAME={node.spec.name}", f"KUBE_ROUTER_CNI_CONF_FILE={conf}",
        node.tool("kube-router"), "--kubeconfig", kubeconfig,
        "--hostname-override", node.spec.name,
        "--run-router=true", "--run-firewall=true", "--run-service-proxy=false",
        # No SNAT of what pods send to other nodes and hosts: v2.1.0 fills the ipset of pod
        # ranges it exempts at start and then every --routes-sync-period, so a node that
        # started before the others would masquerade its pods' traffic to them (their
        # NetworkPolicies would see the node's address). Nothing here routes off the LAN, and
        # the host routes the pod ranges back, so no SNAT is needed anywhere.
        "--enable-cni=true", "--enable-overlay=false", "--enable-pod-egress=false",
        "--routes-sync-period=15s",
        "--enable-ibgp=true", "--nodes-full-mesh=true", f"--bgp-port={BGP_PORT}",
        f"--cluster-asn={ASN}",
        "--advertise-cluster-ip=false", "--advertise-external-ip=false",
        "--advertise-loadbalancer-ip=false", "--advertise-pod-cidr=true",
        f"--service-cluster-ip-range={cp.SERVICE_CIDR}", "--disable-source-dest-check=false",
        "--health-port=20244", "--metrics-port=0", "--v=1"])
