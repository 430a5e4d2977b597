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
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Dict, List

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import control_plane as cp  # noqa: E402

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
CGROUPS = "/sys/fs/cgroup"


def log(msg: str) -> None:
    print(f"cluster: {msg}", file=sys.stderr, flush=True)


def run(*argv: str, check: bool = True, quiet: bool = False, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {(r.stderr or r.stdout).strip()}")
    if not quiet and r.returncode != 0:
        log(f"{' '.join(argv)}: {(r.stderr or r.stdout).strip()}")
    return r


# --- what the node changes on the machine, and how it is undone ----------------------------

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
            with open(os.path.join(self.dir, tool), "w") as f:
                subprocess.run([tool + "-save"], stdout=f, check=True)
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
            "kube-proxy", "coredns", "containerd", "containerd-shim-runc-v2"}


def processes_under(prefix: str) -> List[int]:
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
        if ours or f":/{CGROUP_ROOT}/" in cgroup:
            found.append(int(pid))
    return found


def kill_all(prefix: str) -> None:
    for _ in range(50):
        pids = processes_under(prefix)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    log(f"processes left: {processes_under(prefix)}")


def unmount_under(prefix: str) -> None:
    """Every mount under `prefix`, deepest first (the containers' rootfs, the pods' volumes and
    network namespaces)."""
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    for point in sorted((p for p in points if p.startswith(prefix + "/")), key=len,
                        reverse=True):
        run("umount", "-l", point, check=False, quiet=True)


def make_cgroup_root() -> None:
    """CGROUP_ROOT in every hierarchy (the kubelet wants its cgroupRoot to exist); a cgroup v1
    cpuset starts with no CPUs and no memory nodes, so it gets its parent's."""
    for controller in os.listdir(CGROUPS):
        base = os.path.join(CGROUPS, controller)
        if not os.path.ismount(base):
            continue
        top = os.path.join(base, CGROUP_ROOT)
        os.makedirs(top, exist_ok=True)
        for knob in ("cpuset.cpus", "cpuset.mems"):
            if os.path.exists(os.path.join(top, knob)):
                with open(os.path.join(base, knob)) as f, open(os.path.join(top, knob), "w") as t:
                    t.write(f.read())


def remove_cgroups() -> None:
    for controller in os.listdir(CGROUPS):
        top = os.path.join(CGROUPS, controller, CGROUP_ROOT)
        if not os.path.isdir(top):
            continue
        for root, dirs, _ in os.walk(top, topdown=False):
            for d in dirs:
                try:
                    os.rmdir(os.path.join(root, d))
                except OSError:
                    pass
        try:
            os.rmdir(top)
        except OSError as e:
            log(f"cgroup {top} not removed: {e}")


def clean_host(dirpath: str) -> None:
    """Undoes everything the node did to the machine, from what is on it now: safe to call twice
    and after a crash."""
    kill_all(dirpath)
    unmount_under(dirpath)
    remove_cgroups()
    if os.path.exists(f"/sys/class/net/{BRIDGE}"):
        run("ip", "link", "del", BRIDGE, check=False)
    # The pods are gone, so are their addresses: host-local's reservations would otherwise
    # outlive them and use up the pod range over runs.
    shutil.rmtree(os.path.join(dirpath, "node", "cni-ipam"), ignore_errors=True)
    # veths whose pod side is gone are gone too; one whose netns mount was lazily unmounted
    # goes when its last user does (the processes are dead).
    HostState(dirpath).restore()


# --- the node's components ----------------------------------------------------------------

def write(path: str, text: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


class Node(cp.ComponentGroup):
    def __init__(self, plane: cp.ControlPlane, images: str):
        self.plane = plane
        self.dir = os.path.join(plane.dir, "node")
        self.images = images
        self.sock = os.path.join(self.dir, "containerd.sock")
        self.components: List[cp.Component] = []
        self.timings = plane.timings

    def tool(self, name: str) -> str:
        return os.path.join(self.plane.tools, "bin", name)

    def ctr(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return run("ctr", "--address", self.sock, "--namespace", "k8s.io", *args, **kw)

    def network(self) -> None:
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
        make_cgroup_root()

    def cni_config(self) -> str:
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
        d = os.path.join(self.dir, "cni")
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
        c = cp.Component("containerd", ["containerd", "--config", path], self.plane.logs)
        c.start()
        self.components.append(c)
        cp.wait_until("containerd", lambda: self.ctr("version", quiet=True).returncode == 0,
                      self.components, 30)
        self.import_images()
        self.timings["containerd"] = time.monotonic() - self.t0

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
        cp.client_leaf(self.plane.pki, name, subject)
        kubeconfig = os.path.join(self.dir, name, "kubeconfig")
        os.makedirs(os.path.dirname(kubeconfig), exist_ok=True)
        cp.write_kubeconfig(kubeconfig, self.plane.pki, self.plane.url, name)
        return kubeconfig

    def coredns(self) -> None:
        d = os.path.join(self.dir, "coredns")
        kubeconfig = self.identity("coredns", "/CN=system:coredns")
        # CoreDNS's own RBAC, as its Deployment in a cluster has it.
        self.plane_apply([
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
        corefile = write(os.path.join(d, "Corefile"), f""".:53 {{
    bind {NODE_IP}
    errors
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig} kturn-test
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    cache 5
}}
""")
        c = cp.Component("coredns", [self.tool("coredns"), "-conf", corefile], self.plane.logs)
        c.start()
        self.components.append(c)

    def plane_apply(self, docs: List[dict]) -> None:
        run(self.tool("kubectl"), "--kubeconfig", self.plane.kubeconfig, "apply", "-f", "-",
            input="\n---\n".join(json.dumps(d) for d in docs))

    def kubelet(self) -> None:
        d = os.path.join(self.dir, "kubelet")
        pki = self.plane.pki
        kubeconfig = self.identity("kubelet", f"/O=system:nodes/CN=system:node:{NODE}")
        cp.sign_leaf(pki, "kubelet-serving", f"/O=system:nodes/CN=system:node:{NODE}",
                     [f"subjectAltName=IP:{NODE_IP},DNS:{NODE}", "extendedKeyUsage=serverAuth",
                      "keyUsage=critical,digitalSignature"])
        resolv = write(os.path.join(d, "resolv.conf"), f"nameserver {NODE_IP}\n")
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "address": NODE_IP, "port": 10250, "readOnlyPort": 0, "healthzBindAddress":
            "127.0.0.1", "healthzPort": 10248,
            "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                               "x509": {"clientCAFile": os.path.join(pki, "ca.crt")}},
            "authorization": {"mode": "Webhook"},
            "tlsCertFile": os.path.join(pki, "kubelet-serving.crt"),
            "tlsPrivateKeyFile": os.path.join(pki, "kubelet-serving.key"),
            "containerRuntimeEndpoint": f"unix://{self.sock}",
            "cgroupDriver": "cgroupfs", "cgroupRoot": f"/{CGROUP_ROOT}",
            # This machine has the cgroup v1 hierarchy (cgroup2 only at /sys/fs/cgroup/unified):
            # Kubernetes v1.35 made the kubelet refuse it unless told, v1.36 still runs on it.
            "failCgroupV1": False,
            "clusterDNS": [NODE_IP], "clusterDomain": CLUSTER_DOMAIN, "resolvConf": resolv,
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
        c = cp.Component("kubelet", [
            self.tool("kubelet"), "--config", path, "--kubeconfig", kubeconfig,
            "--root-dir", os.path.join(d, "root"), "--hostname-override", NODE,
            "--node-ip", NODE_IP, "--v", "1"], self.plane.logs)
        c.start()
        self.components.append(c)

    def kube_proxy(self) -> None:
        d = os.path.join(self.dir, "kube-proxy")
        kubeconfig = self.identity("kube-proxy", "/CN=system:kube-proxy")
        config = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": kubeconfig},
            "hostnameOverride": NODE, "mode": "iptables", "clusterCIDR": POD_CIDR,
            "bindAddress": NODE_IP, "healthzBindAddress": "127.0.0.1:10256",
            "metricsBindAddress": "127.0.0.1:10249",
            # Leave the machine's conntrack table size alone.
            "conntrack": {"maxPerCore": 0, "min": 0},
            # NodePorts on the node's address only, not on every address of the machine.
            "nodePortAddresses": [f"{NODE_IP}/32"],
            "oomScoreAdj": 0,  # not -999: see restrict_oom_score_adj
        }
        path = write(os.path.join(d, "config.json"), json.dumps(config, indent=1))
        c = cp.Component("kube-proxy", [self.tool("kube-proxy"), "--config", path],
                         self.plane.logs)
        c.start()
        self.components.append(c)

    def node_ready(self) -> bool:
        node = cp.api(self.plane.url, self.plane.pki, "GET", f"/api/v1/nodes/{NODE}")
        return any(c["type"] == "Ready" and c["status"] == "True"
                   for c in node.get("status", {}).get("conditions", []))

    def start(self) -> None:
        """The node's components; network() ran before the control plane started."""
        self.t0 = time.monotonic()
        self.containerd()
        self.coredns()
        self.kubelet()
        self.kube_proxy()
        cp.wait_until(f"node {NODE} Ready", self.node_ready,
                      self.components + self.plane.components, 120)
        self.timings["node"] = time.monotonic() - self.t0


# --- the supervisor -----------------------------------------------------------------------

def serve(args) -> int:
    # No CRDs: the chart installs kturn's and the Gateway API's, as on any new cluster (a
    # `helm install` would stop on Gateway API CRDs it did not make).
    plane = cp.ControlPlane(args.dir, args.tools, address=NODE_IP, nodes=True, crds=False)
    node = Node(plane, args.images)

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


def cmd_up(args) -> int:
    os.makedirs(args.dir, exist_ok=True)
    cmd_down(args, quiet=True)
    argv = ["--tools", args.tools, "--images", args.images, "--owner", str(args.owner)]
    return cp.spawn_supervisor(__file__, args.dir, argv, "cluster.log", STARTUP_LIMIT)


def cmd_down(args, quiet: bool = False) -> int:
    cp.stop_supervisor(args.dir, __file__, 90)
    clean_host(os.path.abspath(args.dir))  # also when the supervisor died without cleaning
    if not quiet:
        for d in ("etcd", "node"):
            shutil.rmtree(os.path.join(args.dir, d), ignore_errors=True)
        log("stopped")
    return 0


def cmd_run(args) -> int:
    args.owner = 0
    return serve(args)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("up", "run", "serve"):
        p = sub.add_parser(name)
        p.add_argument("--dir", required=True)
        p.add_argument("--tools", required=True)
        p.add_argument("--images", required=True)
        p.add_argument("--owner", type=int, default=0)
    sub.add_parser("down").add_argument("--dir", required=True)
    args = ap.parse_args()
    args.dir = os.path.abspath(args.dir)
    if args.cmd != "down":
        args.tools = os.path.abspath(args.tools)
        args.images = os.path.abspath(args.images)
    return {"up": cmd_up, "down": cmd_down, "run": cmd_run, "serve": serve}[args.cmd](args)


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("cluster.py: a node needs root (network, mounts, cgroups)")
    sys.exit(main())
