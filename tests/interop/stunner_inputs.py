"""Generated inputs for the renderer differential (operator_differential_test.py): valid object
sets such as a STUNner user applies, one per seed, written for the namespaces `stunner`, `media`
and `team` and the controller stunner.l7mp.io/gateway-operator (cp.Scope.localize() moves them).

A set holds one or two GatewayClasses, each with a GatewayConfig (static or ephemeral auth,
inline or through a Secret, a realm, sometimes load balancer annotations) and a Dataplane
(replicas, hostNetwork, health check, labels and annotations); Gateways in `stunner` or `media`
with one to three listeners of every protocol (TLS and DTLS ones with a certificate Secret),
sometimes a static address and the annotations STUNner reads (service type, external traffic
policy, mixed-protocol load balancer, session affinity, target port, health-check exposure);
Services in `media` and `team`, with or without a selector, their EndpointSlices with ready and
not-ready endpoints; a StaticService; and routes: stunner.l7mp.io/v1 and
gateway.networking.k8s.io/v1alpha2 UDPRoutes and stunner.l7mp.io/v1 TCPRoutes, in the Gateway's
namespace or another, naming a Gateway or one of its listeners, Services of the same or another
namespace (with ports and port ranges) and the StaticService. Everything the API server takes;
what an operator does with an odd combination (two listeners on one port, a route to a listener
of another protocol) is part of what is compared.
"""

from __future__ import annotations

import json
import random
from typing import Dict, List, Optional

import harness as h

CONTROLLER = "stunner.l7mp.io/gateway-operator"
# A GatewayConfig annotated so is left without spec.dataplane by the differential (see there).
KEEP_DATAPLANE_IMPLICIT = "kturn.test/implicit-dataplane"
PROTOCOLS = ["TURN-UDP", "TURN-TCP", "TURN-TLS", "TURN-DTLS"]
_cert: Optional[Dict[str, str]] = None


def certificate() -> Dict[str, str]:
    """One self-signed certificate and key (openssl), made once per run."""
    global _cert
    if _cert is None:
        crt, key = h.self_signed_cert("turn.example.com")
        with open(crt) as c, open(key) as k:
            _cert = {"tls.crt": c.read(), "tls.key": k.read()}
    return _cert


def default_dataplane(name: str = "default") -> dict:
    """STUNner's chart's `default` Dataplane (its image and command: an input, not kturn's)."""
    return {"apiVersion": "stunner.l7mp.io/v1", "kind": "Dataplane", "metadata": {"name": name},
            "spec": {"image": "docker.io/l7mp/stunnerd:1.2.1", "imagePullPolicy": "IfNotPresent",
                     "command": ["stunnerd"], "args": ["-w", "--udp-thread-num=16"],
                     "replicas": 1, "hostNetwork": False, "enableMetricsEndpoint": False,
                     "resources": {"limits": {"cpu": "2", "memory": "512Mi"},
                                   "requests": {"cpu": "500m", "memory": "128Mi"}},
                     "terminationGracePeriodSeconds": 3600}}


def missing_dataplane() -> List[dict]:
    """Seed 000's shape with no Dataplane at all: STUNner refuses the Gateway, kturn renders
    with its defaults (docs/migration-from-stunner.md)."""
    return [
        gateway_class("no-dataplane", "no-dataplane-config"),
        {"apiVersion": "stunner.l7mp.io/v1", "kind": "GatewayConfig",
         "metadata": {"name": "no-dataplane-config", "namespace": "stunner",
                      "annotations": {KEEP_DATAPLANE_IMPLICIT: "true"}},
         "spec": {"realm": "stunner.l7mp.io", "authType": "static", "userName": "user",
                  "password": "pass"}},
        {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
         "metadata": {"name": "udp-gateway", "namespace": "stunner"},
         "spec": {"gatewayClassName": "no-dataplane",
                  "listeners": [{"name": "udp", "port": 3478, "protocol": "TURN-UDP"}]}},
    ]


def gateway_class(name: str, config: str) -> dict:
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
            "metadata": {"name": name},
            "spec": {"controllerName": CONTROLLER,
                     "parametersRef": {"group": "stunner.l7mp.io", "kind": "GatewayConfig",
                                       "name": config, "namespace": "stunner"}}}


class Generator:
    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.docs: List[dict] = []
        self.secrets: set = set()

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def add(self, doc: dict) -> dict:
        self.docs.append(doc)
        return doc

    def tls_secret(self, ns: str) -> str:
        name = "tls-secret"
        if (ns, name) not in self.secrets:
            self.secrets.add((ns, name))
            self.add({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                      "metadata": {"name": name, "namespace": ns}, "stringData": certificate()})
        return name

    def config(self, index: int) -> str:
        name = f"config-{index}"
        spec: dict = {"realm": self.r.choice(["stunner.l7mp.io", f"realm{index}.example.com"])}
        ephemeral = self.chance(0.5)
        if self.chance(0.5):  # credentials in a Secret, as the seed's authRef
            secret = f"auth-{index}"
            data = ({"type": self.r.choice(["ephemeral", "longterm"]), "secret": f"s{index}"}
                    if ephemeral else
                    {"type": self.r.choice(["static", "plaintext"]), "username": f"u{index}",
                     "password": f"p{index}"})
            self.add({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                      "metadata": {"name": secret, "namespace": "stunner"}, "stringData": data})
            spec["authRef"] = {"name": secret, "namespace": "stunner"}
        elif ephemeral:
            spec.update(authType="ephemeral", sharedSecret=f"s{index}")
        else:
            spec.update(authType="static", userName=f"u{index}", password=f"p{index}")
        if self.chance(0.3):
            spec["loadBalancerServiceAnnotations"] = {
                "service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}
        if self.chance(0.3):
            spec["logLevel"] = self.r.choice(["all:DEBUG", "all:INFO,turn:DEBUG"])
        dataplane = f"dataplane-{index}"
        spec["dataplane"] = dataplane
        self.add({"apiVersion": "stunner.l7mp.io/v1", "kind": "GatewayConfig",
                  "metadata": {"name": name, "namespace": "stunner"}, "spec": spec})
        plane = default_dataplane(dataplane)
        plane["spec"]["replicas"] = self.r.choice([1, 2, 3])
        plane["spec"]["hostNetwork"] = self.chance(0.2)
        plane["spec"]["disableHealthCheck"] = self.chance(0.3)
        plane["spec"]["enableMetricsEndpoint"] = self.chance(0.3)
        if self.chance(0.3):
            plane["spec"]["labels"] = {"team": f"t{index}"}
        if self.chance(0.3):
            plane["spec"]["annotations"] = {"example.com/owner": f"o{index}"}
        self.add(plane)
        self.add(gateway_class(f"class-{index}", name))
        return f"class-{index}"

    def gateway(self, cls: str, index: int) -> dict:
        ns = self.r.choice(["stunner", "media"])
        listeners = []
        ports = self.r.sample([3478, 3479, 443, 5349, 10000], self.r.choice([1, 2, 3]))
        protocols = [self.r.choice(PROTOCOLS) for _ in ports]
        if self.chance(0.15) and len(ports) > 1:
            # Two listeners on one port (the API server refuses the same protocol twice)
            ports[1] = ports[0]
            protocols[1] = self.r.choice([p for p in PROTOCOLS if p != protocols[0]])
        for i, (port, protocol) in enumerate(zip(ports, protocols)):
            listener: dict = {"name": f"l{i}-{protocol.lower()}", "port": port,
                              "protocol": protocol}
            if protocol in ("TURN-TLS", "TURN-DTLS"):
                listener["tls"] = {"mode": "Terminate", "certificateRefs": [
                    {"kind": "Secret", "name": self.tls_secret(ns)}]}
            listeners.append(listener)
        annotations = {}
        if self.chance(0.4):
            annotations["stunner.l7mp.io/service-type"] = self.r.choice(
                ["ClusterIP", "NodePort", "LoadBalancer"])
        if self.chance(0.3):
            annotations["stunner.l7mp.io/external-traffic-policy"] = "local"
        if self.chance(0.3):
            annotations["stunner.l7mp.io/enable-mixed-protocol-lb"] = "true"
        if self.chance(0.2):
            annotations["stunner.l7mp.io/disable-session-affinity"] = "true"
        if self.chance(0.2):  # listener name -> the port the dataplane pod listens on
            annotations["stunner.l7mp.io/targetport"] = json.dumps(
                {listeners[0]["name"]: 40000 + self.r.randrange(0, 100)})
        if self.chance(0.2):
            annotations["stunner.l7mp.io/disable-health-check-expose"] = "true"
        meta: dict = {"name": f"gateway-{index}", "namespace": ns}
        if annotations:
            meta["annotations"] = annotations
        spec: dict = {"gatewayClassName": cls, "listeners": listeners}
        if self.chance(0.3):
            spec["addresses"] = [{"type": "IPAddress",
                                  "value": f"198.51.100.{self.r.randrange(1, 250)}"}]
        return self.add({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                         "metadata": meta, "spec": spec})

    def service(self, ns: str, index: int) -> str:
        name = f"backend-{index}"
        port = self.r.choice([5000, 10000, 20000])
        spec: dict = {"type": "ClusterIP", "ports": [{"name": "rtp", "protocol": "UDP",
                                                      "port": port}]}
        selector = self.chance(0.4)
        if selector:
            spec["selector"] = {"app": name}
        self.add({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name,
                                                                      "namespace": ns},
                  "spec": spec})
        if not selector:  # kube-controller-manager makes the slices of selector Services
            endpoints = []
            for _ in range(self.r.choice([0, 1, 2, 3])):
                ready = self.chance(0.7)
                endpoints.append({
                    "addresses": [f"10.244.{self.r.randrange(0, 8)}.{self.r.randrange(2, 250)}"],
                    "conditions": {"ready": ready, "serving": ready, "terminating": False}})
            self.add({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                      "metadata": {"name": f"{name}-slice", "namespace": ns,
                                   "labels": {"kubernetes.io/service-name": name}},
                      "addressType": "IPv4",
                      "ports": [{"name": "rtp", "protocol": "UDP", "port": port}],
                      "endpoints": endpoints})
        return name

    def route(self, index: int, gateways: List[dict], backends: List[tuple]) -> None:
        kind, api = self.r.choice([
            ("UDPRoute", "stunner.l7mp.io/v1"), ("UDPRoute", "stunner.l7mp.io/v1"),
            ("UDPRoute", "gateway.networking.k8s.io/v1alpha2"),
            ("TCPRoute", "stunner.l7mp.io/v1")])
        ns = self.r.choice(["stunner", "media"])
        parents = []
        for g in self.r.sample(gateways, self.r.choice([1, min(2, len(gateways))])):
            ref: dict = {"name": g["metadata"]["name"]}
            if g["metadata"]["namespace"] != ns:
                ref["namespace"] = g["metadata"]["namespace"]
            if self.chance(0.3):
                ref["sectionName"] = self.r.choice(g["spec"]["listeners"])["name"]
            parents.append(ref)
        refs = []
        for bns, name, static in self.r.sample(backends, self.r.choice([1, min(2, len(backends))])):
            ref = {"name": name}
            if static:
                ref.update(group="stunner.l7mp.io", kind="StaticService")
            if bns != ns:
                ref["namespace"] = bns
            if self.chance(0.3) and api != "gateway.networking.k8s.io/v1alpha2":
                ref["port"] = self.r.choice([5000, 10000])
                if self.chance(0.5):
                    ref["endPort"] = ref["port"] + 100
            elif api == "gateway.networking.k8s.io/v1alpha2":
                ref["port"] = 1  # required there; STUNner ignores it
            refs.append(ref)
        self.add({"apiVersion": api, "kind": kind,
                  "metadata": {"name": f"route-{index}", "namespace": ns},
                  "spec": {"parentRefs": parents, "rules": [{"backendRefs": refs}]}})

    def generate(self) -> List[dict]:
        classes = [self.config(i) for i in range(self.r.choice([1, 2]))]
        gateways = [self.gateway(self.r.choice(classes), i)
                    for i in range(self.r.choice([1, 2, 3]))]
        backends = [(ns, self.service(ns, i), False)
                    for i, ns in enumerate(self.r.choice([["media"], ["media", "team"],
                                                          ["team", "media", "media"]]))]
        if self.chance(0.4):
            self.add({"apiVersion": "stunner.l7mp.io/v1", "kind": "StaticService",
                      "metadata": {"name": "static-peers", "namespace": "media"},
                      "spec": {"prefixes": ["192.0.2.0/28", "203.0.113.7/32"]}})
            backends.append(("media", "static-peers", True))
        for i in range(self.r.choice([1, 2, 3])):
            self.route(i, gateways, backends)
        return self.docs


def generate(seed: int, workdir: str = "") -> List[dict]:
    """The object set of `seed` (the same set for the same seed)."""
    return Generator(seed).generate()
