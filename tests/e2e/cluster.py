#!/usr/bin/python3
"""A single-node Kubernetes cluster on this machine, for the end-to-end test (make test-e2e) and
for trying kturn by hand: the test suite's control plane (tests/support/control_plane.py) with
kube-scheduler, and one node: containerd (Debian's), runc, the CNI bridge plugin, kubelet and
kube-proxy (from the control plane's Kubernetes release), and CoreDNS for the cluster's names.
Unlike the test suite's control plane it starts without any CRD: the chart brings them. Test
tools only, never shipped.

    cluster.py up   --dir DIR --tools TOOLS --images DIR [--owner PID]
                                               start in the background, until `down` (or
                                               until PID exits)
    cluster.py down --dir DIR                                  stop it and remove what it made
    cluster.py run  --dir DIR --tools TOOLS --images DIR     the same in the foreground

With --nodes N (N > 1) the cluster has N nodes instead, each in a network namespace of its own
with kube-router and a MetalLB speaker beside its kubelet, behind a BGP router and a client
network (tests/e2e/fabric.py; make test-cluster, docs/kubernetes.md#many-nodes). --site a or b
puts it in a region of make test-global instead: its router's uplink is a continent's router of
tests/e2e/globalnet.py, which must be up first.

TOOLS is the folder scripts/build-test-tools.sh --link made. --images is the folder that
scripts/build-images.sh wrote (archives and their list, images.tsv): they are imported into the
node's containerd before the kubelet starts, so that pods find them without a registry; the pod
sandbox (pause) image is among them.

The node's network: a bridge, kturn-e2e0, with the node's address (10.244.0.1) and its pods'
(10.244.0.0/24). The apiserver, the kubelet and CoreDNS listen on the node's address, so that pods
reach them; services are kube-proxy's (iptables mode), on 10.96.0.0/16. Everything else listens on
loopback, and a rule first in FORWARD drops whatever the pods send out of another interface than
their bridge: nothing is routed off the machine.

What the cluster changes on the machine, and `down` (or the supervisor on any exit) undoes:
the bridge and the pods' network namespaces and veths; the iptables and ip6tables rules (saved
before, restored after); the sysctls net.ipv4.ip_forward and net.bridge.bridge-nf-call-iptables
(set to 1, restored); the cgroups under /kturn-e2e (the kubelet's cgroupRoot); mounts under
DIR. Every process it starts, the containers' included, is stopped.

Why containerd 1.6 and cgroup v1 work with Kubernetes v1.36 here: see docs/kubernetes.md, "Try it
on one machine".
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import control_plane as cp  # noqa: E402

import fabric  # noqa: E402
import kuberouter  # noqa: E402
import metallb  # noqa: E402

NODE = "kturn-e2e-node"
BRIDGE = "kturn-e2e0"
NODE_IP = "10.244.0.1"
POD_CIDR = "10.244.0.0/24"
CLUSTER_DOMAIN = "cluster.local"
STARTUP_LIMIT = 300  # seconds for the control plane and the node to become ready
SYSCTLS = {"net/ipv4/ip_forward": "1", "net/bridge/bridge-nf-call-iptables": "1"}
# The kubelet's cgroupRoot: the pods' cgroups are under /kturn-e2e/kubepods in every hierarchy, so
# that `down` finds (and kills) this node's containers only, never another kubelet's /kubepods.
CGROUP_ROOT = "kturn-e2e"
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
CGROUPS = "/sys/fs/cgroup"


def log(msg: str) -> None:
    print(f"cluster: {msg}", file=sys.stderr, flush=True)


run = fabric.run


# --- what the node changes on the machine, and how it is undone ----------------------------

def without_cluster_rules(dump: str) -> List[str]:
    """The lines of an iptables-save dump less what a cluster of this script makes: kube-proxy's
    KUBE-* chains and the rules that use them, and the pod bridge's rules. A run killed before
    its `down` (its saved state went with its build folder) leaves them behind, and the next
    run must not take them for the machine's own."""
    return [line for line in dump.splitlines() if "KUBE-" not in line and BRIDGE not in line]


class HostState:
    """The machine's state that the node changes, saved in DIR/host so that `down` can undo it
    even when the process that saved it is gone."""

    def __init__(self, dirpath: str):
        self.dir = os.path.join(dirpath, "host")

    def save(self) -> None:
        if os.path.exists(os.path.join(self.dir, "saved")):
            return  # an earlier run's: that is the machine's state
        os.makedirs(self.dir, exist_ok=True)
        for tool in ("iptables", "ip6tables"):
            dump = subprocess.run([tool + "-save"], stdout=subprocess.PIPE, text=True,
                                  check=True).stdout
            kept = without_cluster_rules(dump)
            if len(kept) != len(dump.splitlines()):
                log(f"{tool}: {len(dump.splitlines()) - len(kept)} rule(s) and chain(s) of an "
                    f"earlier cluster (kube-proxy's KUBE-*, {BRIDGE}'s) are not the machine's: "
                    "down removes them")
            with open(os.path.join(self.dir, tool), "w") as f:
                f.write("\n".join(kept) + "\n")
        sysctls = {}
        for key in SYSCTLS:
            with open(f"/proc/sys/{key}") as f:
                sysctls[key] = f.read().strip()
        with open(os.path.join(self.dir, "sysctls.json"), "w") as f:
            json.dump(sysctls, f)
        open(os.path.join(self.dir, "saved"), "w").close()

    def restore(self) -> None:
        if not os.path.exists(os.path.join(self.dir, "saved")):
            return
        for tool in ("iptables", "ip6tables"):
            with open(os.path.join(self.dir, tool)) as f:
                subprocess.run([tool + "-restore"], stdin=f, check=False)
        with open(os.path.join(self.dir, "sysctls.json")) as f:
            for key, value in json.load(f).items():
                with open(f"/proc/sys/{key}", "w") as out:
                    out.write(value)
        shutil.rmtree(self.dir)


# What the cluster runs: a leftover of these whose command line names the cluster's folder is
# the cluster's (a supervisor that was killed leaves them).
PROGRAMS = {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet",
            "kube-proxy", "coredns", "containerd", "containerd-shim-runc-v2", "bird",
            "kube-router", "metallb-controller", "metallb-speaker", fabric.FIB_PROGRAM}


def processes_under(prefix: str, cgroup_root: str = CGROUP_ROOT) -> List[int]:
    """The cluster's processes: its programs running with a path under `prefix` (containerd's
    shims name its socket), and every process in its cgroup root (the containers)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{pid}/cgroup") as f:
                cgroup = f.read()
        except OSError:
            continue
        ours = os.path.basename(argv[0].decode(errors="replace")) in PROGRAMS and any(
            prefix.encode() in a for a in argv[1:])
        if ours or f":/{cgroup_root}/" in cgroup:
            found.append(int(pid))
    return found


def kill_all(prefix: str, cgroup_root: str = CGROUP_ROOT) -> None:
    for _ in range(50):
        pids = processes_under(prefix, cgroup_root)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    log(f"processes left: {processes_under(prefix, cgroup_root)}")


def unmount_under(prefix: str) -> None:
    """Every mount under `prefix`, deepest first (the containers' rootfs, the pods' volumes and
    network namespaces)."""
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    for point in sorted((p for p in points if p.startswith(prefix + "/")), key=len,
                        reverse=True):
        run("umount", "-l", point, check=False, quiet=True)


def make_cgroup_root(path: str) -> None:
    """`path` (CGROUP_ROOT or a node's folder under it) in every hierarchy (the kubelet wants its
    cgroupRoot to exist); a cgroup v1 cpuset starts with no CPUs and no memory nodes, so each
    level gets its parent's."""
    for controller in os.listdir(CGROUPS):
        base = os.path.join(CGROUPS, controller)
        if not os.path.ismount(base):
            continue
        parent = base
        for part in path.strip("/").split("/"):
            top = os.path.join(parent, part)
            os.makedirs(top, exist_ok=True)
            for knob in ("cpuset.cpus", "cpuset.mems"):
                if os.path.exists(os.path.join(top, knob)):
                    with open(os.path.join(parent, knob)) as f, \
                            open(os.path.join(top, knob), "w") as t:
                        t.write(f.read())
            parent = top


def remove_cgroups(cgroup_root: str = CGROUP_ROOT) -> None:
    for controller in os.listdir(CGROUPS):
        top = os.path.join(CGROUPS, controller, cgroup_root)
        if not os.path.isdir(top):
            continue
        for path, dirs, _ in os.walk(top, topdown=False):
            for d in dirs:
                try:
                    os.rmdir(os.path.join(path, d))
                except OSError:
                    pass
        try:
            os.rmdir(top)
        except OSError as e:
            log(f"cgroup {top} not removed: {e}")


def clean_host(dirpath: str, where: fabric.Site = fabric.DEFAULT) -> None:
    """Undoes everything the node did to the machine, from what is on it now: safe to call twice
    and after a crash. `where`: a multi-node cluster's site (its cgroups and namespaces)."""
    kill_all(dirpath, where.cgroup_root)
    unmount_under(dirpath)
    remove_cgroups(where.cgroup_root)
    if where is fabric.DEFAULT and os.path.exists(f"/sys/class/net/{BRIDGE}"):
        run("ip", "link", "del", BRIDGE, check=False)
    fabric.Fabric(dirpath, 0, where).remove()  # a multi-node cluster's namespaces, host routes
    # The pods are gone, so are their addresses: host-local's reservations would otherwise
    # outlive them and use up the pod range over runs.
    for node in ["node"] + [d for d in os.listdir(dirpath) if d.startswith("node")] \
            if os.path.isdir(dirpath) else []:
        shutil.rmtree(os.path.join(dirpath, node, "cni-ipam"), ignore_errors=True)
    # veths whose pod side is gone are gone too; one whose netns mount was lazily unmounted
    # goes when its last user does (the processes are dead).
    HostState(dirpath).restore()


# --- the node's components ----------------------------------------------------------------

def write(path: str, text: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


@dataclasses.dataclass
class NodeSpec:
    """Where a node lives: the single-node cluster's is the host itself (ns empty); a multi-node
    cluster's nodes each have a network namespace (tests/e2e/fabric.py)."""
    name: str
    ip: str
    dir: str
    cgroup_root: str  # the kubelet's cgroupRoot, under /CGROUP_ROOT
    dns: str  # CoreDNS's address: the pods' resolver
    cluster_cidr: str  # every pod's range (kube-proxy's clusterCIDR)
    ns: str = ""
    labels: Dict[str, str] = dataclasses.field(default_factory=dict)


def coredns(plane: cp.ControlPlane, dirpath: str, bind: str,
            identity: Callable[[str, str], str]) -> cp.Component:
    """CoreDNS for the cluster's names, on `bind`, with its own RBAC, as its Deployment in a
    cluster has it."""
    kubeconfig = identity("coredns", "/CN=system:coredns")
    plane.apply([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "system:coredns"},
             "rules": [{"apiGroups": [""], "resources": ["endpoints", "services", "pods",
                                                         "namespaces"],
                        "verbs": ["list", "watch"]},
                       {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
                        "verbs": ["list", "watch"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "system:coredns"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                         "name": "system:coredns"},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                           "name": "system:coredns"}]},
    ])
    corefile = write(os.path.join(dirpath, "coredns", "Corefile"), f""".:53 {{
    bind {bind}
    errors
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig} kturn-test
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    cache 5
}}
""")
    c = cp.Component("coredns", [os.path.join(plane.tools, "bin", "coredns"), "-conf",
                                 corefile], plane.logs)
    c.start()
    return c


class Node(cp.ComponentGroup):
    def __init__(self, plane: cp.ControlPlane, images: str, spec: NodeSpec):
        self.plane = plane
        self.spec = spec
        self.dir = spec.dir
        self.images = images
        self.sock = os.path.join(self.dir, "containerd.sock")
        self.components: List[cp.Component] = []
        self.timings = plane.timings
        # Component names (their log files) carry the node's name when there are several.
        self.tag = f"-{spec.name}" if spec.ns else ""

    def tool(self, name: str) -> str:
        return os.path.join(self.plane.tools, "bin", name)

    def argv(self, *argv: str) -> List[str]:
        """argv as the node runs it: in its network namespace, if it has one."""
        return fabric.in_ns(self.spec.ns, *argv) if self.spec.ns else list(argv)

    def start_component(self, name: str, argv: List[str]) -> cp.Component:
        c = cp.Component(name + self.tag, self.argv(*argv), self.plane.logs)
        c.start()
        self.components.append(c)
        return c

    def ctr(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return run("ctr", "--address", self.sock, "--namespace", "k8s.io", *args, **kw)

    def network(self) -> None:
        """The single-node cluster's network, on the host: the pods' bridge with the node's
        address."""
        os.makedirs(self.dir, exist_ok=True)
        HostState(self.plane.dir).save()
        for key, value in SYSCTLS.items():
            with open(f"/proc/sys/{key}", "w") as f:
                f.write(value)
        run("ip", "link", "add", BRIDGE, "type", "bridge")
        run("ip", "addr", "add", f"{NODE_IP}/24", "dev", BRIDGE)
        run("ip", "link", "set", BRIDGE, "up")
        # Forwarding is on for the pods' bridge: nothing of theirs may leave by another
        # interface (a relay to an address off this machine, the seed's documentation IP).
        run("iptables", "-I", "FORWARD", "1", "-s", POD_CIDR, "!", "-o", BRIDGE, "-j", "DROP")

    def cni_config(self) -> str:
        """The CNI configuration folder containerd reads. One node: the bridge plugin on the
        host's bridge. Several: kube-router's (it writes the node's pod range into it)."""
        d = os.path.join(self.dir, "cni")
        if self.spec.ns:
            write(os.path.join(d, kuberouter.CNI_CONF), kuberouter.cni_config(self.dir))
            return d
        conf = {
            "cniVersion": "1.0.0", "name": "kturn-e2e",
            "plugins": [
                {"type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": False,
                 "hairpinMode": True,
                 "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_CIDR,
                                                              "gateway": NODE_IP}]],
                          "routes": [{"dst": "0.0.0.0/0"}],
                          "dataDir": os.path.join(self.dir, "cni-ipam")}},
                {"type": "portmap", "capabilities": {"portMappings": True}},
            ],
        }
        write(os.path.join(d, "10-kturn-e2e.conflist"), json.dumps(conf, indent=1))
        return d

    def containerd(self) -> None:
        cni = self.cni_config()
        # Kubernetes' pause image is on a registry: the sandbox is tests/e2e/pause.c's image.
        pause = [n for n, _ in self.images_listed() if "/kturn-e2e/pause:" in n]
        if not pause:
            raise RuntimeError("scripts/build-images.sh built no kturn-e2e/pause image")
        config = f"""version = 2
root = "{self.dir}/containerd/root"
state = "{self.dir}/containerd/state"
[grpc]
  address = "{self.sock}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause[-1]}"
  netns_mounts_under_state_dir = true
  # No process here has CAP_SYS_RESOURCE, so none may lower its oom_score_adj (the sandboxes'
  # -998 fails in runc): keep every container's at or above containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{cni}"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        # runc's state beside containerd's, not in /run/containerd, where a system containerd
        # would keep its own.
        Root = "{self.dir}/runc"
"""
        path = write(os.path.join(self.dir, "containerd.toml"), config)
        self.start_component("containerd", ["containerd", "--config", path])
        cp.wait_until("containerd", lambda: self.ctr("version", quiet=True).returncode == 0,
                      self.components, 30)
        self.import_images()
        self.timings["containerd" + self.tag] = time.monotonic() - self.t0

    def images_listed(self) -> List[tuple]:
        """scripts/build-images.sh's images.tsv in --images: (image name, archive path)."""
        listing = os.path.join(self.images, "images.tsv")
        if not os.path.exists(listing):
            raise RuntimeError(f"no {listing}: scripts/build-images.sh --out DIR makes the "
                               "images, the pod sandbox's among them, and --images DIR names it")
        with open(listing) as f:  # image name, archive file, image id
            rows = [line.split("\t") for line in f if line.strip() and not line.startswith("#")]
        return [(r[0], os.path.join(self.images, r[1])) for r in rows]

    def import_images(self) -> None:
        for _, archive in self.images_listed():
            self.ctr("images", "import", "--all-platforms", archive)
        names = self.ctr("images", "ls", "-q").stdout.split()
        log(f"images: {', '.join(n for n in names if not n.startswith('sha256:'))}")

    def identity(self, name: str, subject: str) -> str:
        """A client certificate from the cluster CA for `subject`, and the kubeconfig that
        presents it: node/NAME/kubeconfig."""
        return identity(self.plane, self.dir, name + self.tag, subject)

    def kubelet(self) -> None:
        d = os.path.join(self.dir, "kubelet")
        pki = self.plane.pki
        name, ip = self.spec.name, self.spec.ip
        kubeconfig = self.identity("kubelet", f"/O=system:nodes/CN=system:node:{name}")
        serving = "kubelet-serving" + self.tag
        cp.sign_leaf(pki, serving, f"/O=system:nodes/CN=system:node:{name}",
                     [f"subjectAltName=IP:{ip},DNS:{name}", "extendedKeyUsage=serverAuth",
                      "keyUsage=critical,digitalSignature"])
        resolv = write(os.path.join(d, "resolv.conf"), f"nameserver {self.spec.dns}\n")
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "address": ip, "port": 10250, "readOnlyPort": 0, "healthzBindAddress":
            "127.0.0.1", "healthzPort": 10248,
            "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                               "x509": {"clientCAFile": os.path.join(pki, "ca.crt")}},
            "authorization": {"mode": "Webhook"},
            "tlsCertFile": os.path.join(pki, serving + ".crt"),
            "tlsPrivateKeyFile": os.path.join(pki, serving + ".key"),
            "containerRuntimeEndpoint": f"unix://{self.sock}",
            "cgroupDriver": "cgroupfs", "cgroupRoot": f"/{self.spec.cgroup_root}",
            # This machine has the cgroup v1 hierarchy (cgroup2 only at /sys/fs/cgroup/unified):
            # Kubernetes v1.35 made the kubelet refuse it unless told, v1.36 still runs on it.
            "failCgroupV1": False,
            "clusterDNS": [self.spec.dns], "clusterDomain": CLUSTER_DOMAIN, "resolvConf": resolv,
            "failSwapOn": False,
            "podLogsDir": os.path.join(d, "pod-logs"),
            "staticPodPath": "",
            "serializeImagePulls": False,
            # The images were imported, not pulled: nothing may collect them, and a busy disk
            # must not evict the test's pods.
            "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
            "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%",
                             "imagefs.available": "1%"},
            "maxPods": 50,
            "podPidsLimit": 4096,
            "shutdownGracePeriod": "0s",
            "protectKernelDefaults": False,
            "makeIPTablesUtilChains": False,
            "oomScoreAdj": 0,  # not -999: see restrict_oom_score_adj
        }
        path = write(os.path.join(d, "config.json"), json.dumps(config, indent=1))
        labels = ",".join(f"{k}={v}" for k, v in self.spec.labels.items())
        self.start_component("kubelet", [
            self.tool("kubelet"), "--config", path, "--kubeconfig", kubeconfig,
            "--root-dir", os.path.join(d, "root"), "--hostname-override", name,
            "--node-ip", ip, *(["--node-labels", labels] if labels else []), "--v", "1"])

    def kube_proxy(self) -> None:
        d = os.path.join(self.dir, "kube-proxy")
        kubeconfig = self.identity("kube-proxy", "/CN=system:kube-proxy")
        config = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": kubeconfig},
            "hostnameOverride": self.spec.name, "mode": "iptables",
            "clusterCIDR": self.spec.cluster_cidr, "bindAddress": self.spec.ip,
            "healthzBindAddress": "127.0.0.1:10256",
            "metricsBindAddress": "127.0.0.1:10249",
            # Leave the machine's conntrack table size alone.
            "conntrack": {"maxPerCore": 0, "min": 0},
            # NodePorts on the node's address only, not on every address of the machine.
            "nodePortAddresses": [f"{self.spec.ip}/32"],
            "oomScoreAdj": 0,  # not -999: see restrict_oom_score_adj
        }
        path = write(os.path.join(d, "config.json"), json.dumps(config, indent=1))
        self.start_component("kube-proxy", [self.tool("kube-proxy"), "--config", path])

    def node_ready(self) -> bool:
        node = cp.api(self.plane.url, self.plane.pki, "GET",
                      f"/api/v1/nodes/{self.spec.name}")
        return any(c["type"] == "Ready" and c["status"] == "True"
                   for c in node.get("status", {}).get("conditions", []))

    def start(self) -> None:
        """The node's components: the single node's network() ran before the control plane
        started, a multi-node cluster's fabric before that."""
        self.t0 = time.monotonic()
        make_cgroup_root(self.spec.cgroup_root)
        self.containerd()
        if not self.spec.ns:
            self.components.append(coredns(self.plane, self.dir, NODE_IP, self.identity))
        self.kubelet()
        self.kube_proxy()
        if self.spec.ns:
            self.pod_cidr = pod_cidr(self.plane, self.spec.name)
            kuberouter.start(self)
            metallb.speaker(self)
        cp.wait_until(f"node {self.spec.name} Ready", self.node_ready,
                      self.components + self.plane.components, 120)
        self.timings["node" + self.tag] = time.monotonic() - self.t0


# --- the supervisor -----------------------------------------------------------------------

def serve(args) -> int:
    # No CRDs: the chart installs kturn's and the Gateway API's, as on any new cluster (a
    # `helm install` would stop on Gateway API CRDs it did not make).
    plane = cp.ControlPlane(args.dir, args.tools, address=NODE_IP, nodes=True, crds=False)
    node = Node(plane, args.images, NodeSpec(
        name=NODE, ip=NODE_IP, dir=os.path.join(plane.dir, "node"), cgroup_root=CGROUP_ROOT,
        dns=NODE_IP, cluster_cidr=POD_CIDR))

    def start() -> Dict[str, float]:
        clean_host(plane.dir)  # an earlier run's leftovers
        node.network()  # the apiserver binds the node's address
        plane.start()
        node.start()
        with open(os.path.join(plane.dir, "env"), "a") as f:
            f.write(f"NODE={NODE}\nNODE_IP={NODE_IP}\nCONTAINERD={node.sock}\n")
        return plane.timings

    def stop() -> None:
        node.stop()
        plane.stop()
        clean_host(plane.dir)

    return cp.supervise(plane.dir, args.owner, start, lambda: node.check() or plane.check(),
                        stop)


def zone(i: int) -> str:
    """Node i's zone: two zones, the odd nodes in one and the even in the other."""
    return "zone-a" if i % 2 else "zone-b"


def serve_nodes(args) -> int:
    """The multi-node cluster: the fabric (tests/e2e/fabric.py) and its router, the control plane
    and CoreDNS on the host's LAN address, MetalLB's controller, and N nodes; all of it in the
    site --site names (make test-global runs two, one per region)."""
    where = fabric.site(args.site)
    plane = cp.ControlPlane(args.dir, args.tools, address=where.host_ip, nodes=True,
                            crds=False, pod_cidr=where.cluster_cidr)
    net = fabric.Fabric(plane.dir, args.nodes, where)
    nodes = [Node(plane, args.images, NodeSpec(
        name=node_name(i), ip=where.node_ip(i), dir=os.path.join(plane.dir, f"node{i}"),
        cgroup_root=f"{where.cgroup_root}/n{i}", dns=where.host_ip,
        cluster_cidr=where.cluster_cidr, ns=where.node_ns(i), labels={
            ZONE_LABEL: zone(i), **({REGION_LABEL: args.site} if args.site else {})}))
        for i in range(1, args.nodes + 1)]
    shared = cp.ComponentGroup()  # the router, CoreDNS, MetalLB's controller
    shared.components = []

    def start() -> Dict[str, float]:
        t0 = time.monotonic()
        clean_host(plane.dir, where)  # an earlier run's leftovers
        net.create()
        plane.start()  # first: it clears the logs folder
        for name, argv in (("bird", net.bird_argv()), ("fib", net.fib_argv())):
            shared.components.append(cp.Component(name, argv, plane.logs))
            shared.components[-1].start()
        shared.components.append(coredns(plane, plane.dir, where.host_ip,
                                         lambda n, s: identity(plane, plane.dir, n, s)))
        kuberouter.install(plane)
        shared.components.append(metallb.install(plane, lambda n, s: identity(
            plane, plane.dir, n, s), where))
        for node in nodes:
            node.start()
        net.route_pods({i + 1: n.pod_cidr for i, n in enumerate(nodes)})
        plane.timings["nodes"] = time.monotonic() - t0
        with open(os.path.join(plane.dir, "env"), "a") as f:
            f.write(f"NODES={','.join(n.spec.name for n in nodes)}\n"
                    f"NODE_IPS={','.join(n.spec.ip for n in nodes)}\n"
                    f"NODE_NETNS={','.join(n.spec.ns for n in nodes)}\n"
                    f"NODE_CONTAINERD={','.join(n.spec.name + '=' + n.sock for n in nodes)}\n"
                    f"ROUTER_NETNS={where.router_ns}\nBIRD_SOCKET={net.bird_socket()}\n"
                    f"LB_POOL={where.pools[-1][1]}\nHOST_IP={where.host_ip}\n"
                    f"LAN={where.lan}\nSITE={args.site}\n")
            if where.client_net:
                f.write(f"CLIENT_NETNS={where.client_ns}\nCLIENT_IP={where.client_ip}\n")
        return plane.timings

    def check() -> Optional[str]:
        for group in (*nodes, shared, plane):
            problem = group.check()
            if problem:
                return problem
        return None

    def stop() -> None:
        for group in (*nodes, shared):
            group.stop()
        plane.stop()
        clean_host(plane.dir, where)

    return cp.supervise(plane.dir, args.owner, start, check, stop)


def node_name(i: int) -> str:
    return f"kturn-n{i}"


def identity(plane: cp.ControlPlane, dirpath: str, name: str, subject: str) -> str:
    """A client certificate from the cluster CA for `subject`, and its kubeconfig:
    DIR/NAME/kubeconfig."""
    cp.client_leaf(plane.pki, name, subject)
    kubeconfig = os.path.join(dirpath, name, "kubeconfig")
    os.makedirs(os.path.dirname(kubeconfig), exist_ok=True)
    cp.write_kubeconfig(kubeconfig, plane.pki, plane.url, name)
    return kubeconfig


def pod_cidr(plane: cp.ControlPlane, node: str) -> str:
    """The node's pod range, once kube-controller-manager gave it one."""
    found: List[str] = []

    def given() -> bool:
        spec = cp.api(plane.url, plane.pki, "GET", f"/api/v1/nodes/{node}").get("spec", {})
        found[:] = [spec.get("podCIDR", "")]
        return bool(found[0])

    cp.wait_until(f"node {node}'s podCIDR", given, plane.components, 60)
    return found[0]


def cmd_up(args) -> int:
    os.makedirs(args.dir, exist_ok=True)
    cmd_down(args, quiet=True)
    argv = ["--tools", args.tools, "--images", args.images, "--owner", str(args.owner),
            "--nodes", str(args.nodes), "--site", args.site]
    with open(os.path.join(args.dir, "site"), "w") as f:  # for `down`
        f.write(args.site)
    # Each more node imports the images and starts its own runtime: two minutes more each.
    return cp.spawn_supervisor(__file__, args.dir, argv, "cluster.log",
                               STARTUP_LIMIT + 120 * (args.nodes - 1))


def cmd_down(args, quiet: bool = False) -> int:
    cp.stop_supervisor(args.dir, __file__, 90)
    # `up` names its site; `down` finds the one `up` wrote down.
    site_file = os.path.join(args.dir, "site")
    where = getattr(args, "site", "")
    if not hasattr(args, "site") and os.path.exists(site_file):
        with open(site_file) as f:
            where = f.read().strip()
    # Also when the supervisor died without cleaning.
    clean_host(os.path.abspath(args.dir), fabric.site(where))
    if not quiet:
        for d in os.listdir(args.dir) if os.path.isdir(args.dir) else []:
            if d == "etcd" or d.startswith("node"):
                shutil.rmtree(os.path.join(args.dir, d), ignore_errors=True)
        log("stopped")
    return 0


def cmd_run(args) -> int:
    args.owner = 0
    return serve_any(args)


def serve_any(args) -> int:
    return serve_nodes(args) if args.nodes > 1 or args.site else serve(args)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("up", "run", "serve"):
        p = sub.add_parser(name)
        p.add_argument("--dir", required=True)
        p.add_argument("--tools", required=True)
        p.add_argument("--images", required=True)
        p.add_argument("--owner", type=int, default=0)
        p.add_argument("--nodes", type=int, default=1,
                       help="1: the single-node cluster; more: the multi-node one")
        p.add_argument("--site", default="", choices=["", *fabric.REGIONS],
                       help="a multi-node cluster's network: make test-cluster's (the default) "
                            "or a region of make test-global's (tests/e2e/fabric.py)")
    sub.add_parser("down").add_argument("--dir", required=True)
    args = ap.parse_args()
    args.dir = os.path.abspath(args.dir)
    if args.cmd != "down":
        args.tools = os.path.abspath(args.tools)
        args.images = os.path.abspath(args.images)
    return {"up": cmd_up, "down": cmd_down, "run": cmd_run, "serve": serve_any}[args.cmd](args)


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("cluster.py: a node needs root (network, mounts, cgroups)")
    sys.exit(main())
