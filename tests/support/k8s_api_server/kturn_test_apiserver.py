#!/usr/bin/python3
"""kturn-test-apiserver: a small Kubernetes API server for tests (DESIGN.md §4). Never shipped.

No Kubernetes API server can be installed on the development machines, so the operator's client
is exercised against this one. It speaks the wire protocol the Kubernetes API documentation
describes (https://kubernetes.io/docs/reference/using-api/api-concepts/), for the parts kturn
uses:

  * paths  /api/v1/[namespaces/<ns>/]<plural>[/<name>[/status]]
           /apis/<group>/<version>/[namespaces/<ns>/]<plural>[/<name>[/status]]
    a namespaced plural without a namespace lists (and watches) across all namespaces;
  * GET of a collection: a <Kind>List with metadata.resourceVersion; labelSelector (k=v, k!=v,
    k) and fieldSelector (metadata.name=, metadata.namespace=) are honoured. As the real server,
    items of built-in kinds carry no apiVersion/kind, items of custom resources do;
  * GET ?watch=true[&resourceVersion=N][&allowWatchBookmarks=true][&timeoutSeconds=S]: a chunked
    stream of newline-delimited WatchEvents (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR). Without
    resourceVersion (or "0") the current objects come first as ADDED. A resourceVersion older
    than the compacted history gets an ERROR event carrying a Status with code 410, reason
    Expired ("too old resource version"), as the watch cache answers;
  * POST (create, 409 AlreadyExists), PUT (update; a stale metadata.resourceVersion is a 409
    Conflict), DELETE, PATCH with application/merge-patch+json, application/strategic-merge-
    patch+json (treated as a merge patch) and application/apply-patch+yaml (server-side apply:
    fieldManager required, field ownership per manager, 409 Conflict when another manager owns
    a field with a different value unless force=true; a no-op apply changes nothing, not even
    the resourceVersion);
  * the status subresource: PUT/PATCH .../status changes only .status; the main resource
    ignores .status on update;
  * metadata.generation bumped on spec changes; uid, creationTimestamp, resourceVersion set;
  * coordination.k8s.io/v1 Leases are ordinary objects: optimistic concurrency by
    resourceVersion is what leader election needs;
  * bearer-token authentication (401 Status otherwise), HTTPS with a self-signed certificate
    (real OpenSSL through Python's ssl module; the certificate is made with the openssl CLI);
  * --not-served <plural>[.<group>]: the kind is not served (its CRD is not installed): 404, as
    any unknown path; --forbid <plural>[.<group>]: every request for the kind is a 403 Forbidden
    Status, as RBAC answers a service account without the permission.

Test control, outside the Kubernetes API (no authentication; loopback only):
  POST /testctl/compact         forget the event history: older resourceVersions get 410
  POST /testctl/close-watches   end every open watch stream (clients must reconnect)
  POST /testctl/hold-watches    new watch requests wait (up to 30 s) until release-watches:
  POST /testctl/release-watches lets a test change and compact while a client is between watches
  GET  /testctl/requests        the request log: [{method, path, query, contentType, code}]
  GET  /testctl/state           every stored object

  kturn_test_apiserver.py --port 0 --tls --token T --manifests DIR --ready-file F \
      --kubeconfig-out K
writes "<port>\n" to F once it serves, and a kubeconfig pointing at itself to K.
"""

from __future__ import annotations

import argparse
import base64
import copy
import datetime
import json
import os
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Optional, Tuple

import yaml

# kind -> (group, version, plural, namespaced). Kinds not listed are accepted from manifests
# with plural = lower(kind) + "s", namespaced when the manifest names a namespace.
KINDS: Dict[str, Tuple[str, str, str, bool]] = {
    "Namespace": ("", "v1", "namespaces", False),
    "Node": ("", "v1", "nodes", False),
    "Secret": ("", "v1", "secrets", True),
    "Service": ("", "v1", "services", True),
    "ConfigMap": ("", "v1", "configmaps", True),
    "Pod": ("", "v1", "pods", True),
    "EndpointSlice": ("discovery.k8s.io", "v1", "endpointslices", True),
    "Deployment": ("apps", "v1", "deployments", True),
    "DaemonSet": ("apps", "v1", "daemonsets", True),
    "Lease": ("coordination.k8s.io", "v1", "leases", True),
    "GatewayClass": ("gateway.networking.k8s.io", "v1", "gatewayclasses", False),
    "Gateway": ("gateway.networking.k8s.io", "v1", "gateways", True),
    "ReferenceGrant": ("gateway.networking.k8s.io", "v1beta1", "referencegrants", True),
    "GatewayConfig": ("stunner.l7mp.io", "v1", "gatewayconfigs", True),
    "Dataplane": ("stunner.l7mp.io", "v1", "dataplanes", False),
    "StaticService": ("stunner.l7mp.io", "v1", "staticservices", True),
}
# UDPRoute and TCPRoute exist in two groups; the plural alone is the same.
ROUTE_KINDS = {"UDPRoute": "udproutes", "TCPRoute": "tcproutes"}
# Groups whose objects the real server serves from typed Go structs: list items have no
# apiVersion/kind. Everything else is a custom resource (unstructured): items keep them.
BUILTIN_GROUPS = {"", "apps", "discovery.k8s.io", "coordination.k8s.io"}
# Fields of metadata that only the server sets; apply and update never change them.
SERVER_META = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


def now_rfc3339() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_obj(code: int, reason: str, message: str, details: Optional[dict] = None) -> dict:
    s = {"kind": "Status", "apiVersion": "v1", "metadata": {},
         "status": "Success" if code < 400 else "Failure", "message": message,
         "reason": reason, "code": code}
    if details:
        s["details"] = details
    return s


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: Optional[dict] = None):
        super().__init__(message)
        self.status = status_obj(code, reason, message, details)


# ---------------------------------------------------------------------------------------------
# Field paths and patches
# ---------------------------------------------------------------------------------------------


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def leaf_paths(value, prefix=()) -> Dict[tuple, object]:
    """Leaves of a tree: maps are walked, lists and scalars are leaves (atomic lists)."""
    if isinstance(value, dict) and value:
        out = {}
        for k, v in value.items():
            out.update(leaf_paths(v, prefix + (k,)))
        return out
    return {prefix: value}


def get_path(tree, path):
    for k in path:
        if not isinstance(tree, dict) or k not in tree:
            return None
        tree = tree[k]
    return tree


def set_path(tree, path, value):
    for k in path[:-1]:
        if not isinstance(tree.get(k), dict):
            tree[k] = {}
        tree = tree[k]
    tree[path[-1]] = copy.deepcopy(value)


def del_path(tree, path):
    parents = []
    for k in path[:-1]:
        if not isinstance(tree, dict) or k not in tree:
            return
        parents.append((tree, k))
        tree = tree[k]
    if isinstance(tree, dict):
        tree.pop(path[-1], None)
    for parent, k in reversed(parents):  # prune maps left empty
        if parent[k] == {}:
            del parent[k]
        else:
            break


def fields_v1(paths) -> dict:
    out: dict = {}
    for p in paths:
        node = out
        for k in p:
            node = node.setdefault(f"f:{k}", {})
    return out


def applied_paths(obj: dict, subresource: str) -> Dict[tuple, object]:
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    if subresource == "status":
        body = {"status": body.get("status", {})}
    else:
        body.pop("status", None)
    paths = leaf_paths(body) if body else {}
    paths.pop((), None)
    meta = obj.get("metadata", {}) or {}
    for key in ("labels", "annotations"):
        for k, v in (meta.get(key) or {}).items():
            paths[("metadata", key, k)] = v
    if meta.get("ownerReferences"):
        paths[("metadata", "ownerReferences")] = meta["ownerReferences"]
    return paths


# ---------------------------------------------------------------------------------------------
# The store
# ---------------------------------------------------------------------------------------------


class Resource:
    def __init__(self, group: str, version: str, plural: str, kind: str, namespaced: bool):
        self.group, self.version, self.plural = group, version, plural
        self.kind, self.namespaced = kind, namespaced

    @property
    def key(self) -> Tuple[str, str]:
        return (self.group, self.plural)


class Store:
    def __init__(self, history: int):
        self.cond = threading.Condition()
        self.rv = 1
        self.objects: Dict[tuple, dict] = {}  # (group, plural, ns, name) -> object
        self.owners: Dict[tuple, Dict[tuple, str]] = {}  # object key -> {path: manager}
        self.resources: Dict[Tuple[str, str], Resource] = {}
        self.events: List[Tuple[int, str, tuple, dict]] = []  # (rv, type, resource key, obj)
        self.compacted = 0  # watches from a resourceVersion below this get 410
        self.history = history
        self.watch_generation = 0  # bumped to end every watch stream
        self.watches_released = threading.Event()  # cleared by /testctl/hold-watches
        self.watches_released.set()
        for kind, (g, v, plural, namespaced) in KINDS.items():
            self.resources[(g, plural)] = Resource(g, v, plural, kind, namespaced)
        for kind, plural in ROUTE_KINDS.items():
            self.resources[("stunner.l7mp.io", plural)] = Resource(
                "stunner.l7mp.io", "v1", plural, kind, True)
            self.resources[("gateway.networking.k8s.io", plural)] = Resource(
                "gateway.networking.k8s.io", "v1alpha2", plural, kind, True)

    # -- helpers (call with the lock held)
    def _next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def _record(self, etype: str, res: Resource, obj: dict) -> None:
        self.events.append((int(obj["metadata"]["resourceVersion"]), etype, res.key,
                            copy.deepcopy(obj)))
        if len(self.events) > self.history:
            drop = len(self.events) - self.history
            self.compacted = max(self.compacted, self.events[drop - 1][0])
            del self.events[:drop]
        self.cond.notify_all()

    def resource_for_object(self, obj: dict) -> Resource:
        api_version = obj.get("apiVersion", "")
        kind = obj.get("kind", "")
        group, _, version = api_version.rpartition("/")
        for res in self.resources.values():
            if res.kind == kind and res.group == group:
                return res
        namespaced = bool((obj.get("metadata") or {}).get("namespace"))
        res = Resource(group, version, kind.lower() + "s", kind, namespaced)
        self.resources[res.key] = res
        return res

    def _stamp_new(self, res: Resource, obj: dict, ns: str) -> dict:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        if res.namespaced:
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        meta["generation"] = 1
        meta["resourceVersion"] = self._next_rv()
        if "stringData" in obj and res.kind == "Secret":  # as the API server stores it
            data = obj.setdefault("data", {}) or {}
            for k, v in obj.pop("stringData").items():
                data[k] = base64.b64encode(str(v).encode()).decode()
            obj["data"] = data
        return obj

    def _bump(self, old: dict, new: dict) -> None:
        meta = new["metadata"]
        meta["generation"] = old["metadata"].get("generation", 1)
        strip = lambda o: {k: v for k, v in o.items() if k not in ("metadata", "status")}
        if strip(old) != strip(new):
            meta["generation"] += 1
        meta["resourceVersion"] = self._next_rv()

    # -- operations
    def create(self, res: Resource, ns: str, obj: dict, manager: str = "") -> dict:
        name = (obj.get("metadata") or {}).get("name")
        if not name:
            raise ApiError(422, "Invalid", f"{res.kind} is invalid: metadata.name: Required value")
        with self.cond:
            key = (res.group, res.plural, ns if res.namespaced else "", name)
            if key in self.objects:
                raise ApiError(409, "AlreadyExists",
                               f'{res.plural}.{res.group} "{name}" already exists',
                               {"name": name, "group": res.group, "kind": res.plural})
            obj = self._stamp_new(res, obj, ns)
            obj.setdefault("apiVersion", f"{res.group}/{res.version}".lstrip("/"))
            obj.setdefault("kind", res.kind)
            self.objects[key] = obj
            self._record("ADDED", res, obj)
            return copy.deepcopy(obj)

    def get(self, res: Resource, ns: str, name: str) -> dict:
        with self.cond:
            obj = self.objects.get((res.group, res.plural, ns if res.namespaced else "", name))
            if obj is None:
                raise not_found(res, name)
            return copy.deepcopy(obj)

    def update(self, res: Resource, ns: str, name: str, obj: dict, subresource: str) -> dict:
        with self.cond:
            key = (res.group, res.plural, ns if res.namespaced else "", name)
            old = self.objects.get(key)
            if old is None:
                raise not_found(res, name)
            want_rv = (obj.get("metadata") or {}).get("resourceVersion")
            if want_rv and want_rv != old["metadata"]["resourceVersion"]:
                raise conflict(res, name)
            if subresource == "status":
                new = copy.deepcopy(old)
                if "status" in obj:
                    new["status"] = copy.deepcopy(obj["status"])
                else:
                    new.pop("status", None)
            else:
                new = copy.deepcopy(obj)
                new["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items()
                                   if k not in SERVER_META}
                for k in SERVER_META:
                    if k in old["metadata"]:
                        new["metadata"][k] = copy.deepcopy(old["metadata"][k])
                new["metadata"]["name"] = name
                if res.namespaced:
                    new["metadata"]["namespace"] = ns
                if "status" in old:
                    new["status"] = copy.deepcopy(old["status"])
                else:
                    new.pop("status", None)
                new.setdefault("apiVersion", old["apiVersion"])
                new.setdefault("kind", old["kind"])
            return self._commit(res, key, old, new)

    def _commit(self, res: Resource, key: tuple, old: dict, new: dict) -> dict:
        if new == old:  # nothing changed: no new resourceVersion, no event
            return copy.deepcopy(old)
        self._bump(old, new)
        self.objects[key] = new
        self._record("MODIFIED", res, new)
        return copy.deepcopy(new)

    def merge(self, res: Resource, ns: str, name: str, patch: dict, subresource: str) -> dict:
        with self.cond:
            key = (res.group, res.plural, ns if res.namespaced else "", name)
            old = self.objects.get(key)
            if old is None:
                raise not_found(res, name)
            want_rv = (patch.get("metadata") or {}).get("resourceVersion")
            if want_rv and want_rv != old["metadata"]["resourceVersion"]:
                raise conflict(res, name)
            if subresource == "status":
                patch = {"status": patch.get("status")} if "status" in patch else {}
            else:
                patch = {k: v for k, v in patch.items() if k != "status"}
                if "metadata" in patch:
                    patch["metadata"] = {k: v for k, v in (patch["metadata"] or {}).items()
                                         if k not in SERVER_META + ("name", "namespace")}
            new = merge_patch(old, patch)
            return self._commit(res, key, old, new)

    def apply(self, res: Resource, ns: str, name: str, obj: dict, manager: str, force: bool,
              subresource: str) -> Tuple[dict, bool]:
        """Server-side apply. Returns (object, created)."""
        meta = obj.get("metadata") or {}
        if meta.get("name") not in (None, name):
            raise ApiError(400, "BadRequest", "the name of the object does not match the URL")
        with self.cond:
            key = (res.group, res.plural, ns if res.namespaced else "", name)
            old = self.objects.get(key)
            paths = applied_paths(obj, subresource)
            if old is None:
                if subresource == "status":
                    raise not_found(res, name)
                body = copy.deepcopy(obj)
                body.setdefault("metadata", {})["name"] = name
                body.pop("status", None)
                created = self._stamp_new(res, body, ns)
                created["apiVersion"] = obj.get("apiVersion") or f"{res.group}/{res.version}"
                created["kind"] = res.kind
                self.owners[key] = {p: manager for p in paths}
                self._set_managed_fields(created, key)
                self.objects[key] = created
                self._record("ADDED", res, created)
                return copy.deepcopy(created), True
            owners = self.owners.setdefault(key, {})
            conflicts = [p for p, v in paths.items()
                         if owners.get(p, manager) != manager and get_path(old, p) != v]
            if conflicts and not force:
                msg = "Apply failed with %d conflict%s: %s" % (
                    len(conflicts), "s" if len(conflicts) > 1 else "",
                    "; ".join(f'conflict with "{owners[p]}": .{".".join(p)}'
                              for p in sorted(conflicts)))
                raise ApiError(409, "Conflict", msg,
                               {"name": name, "group": res.group, "kind": res.plural})
            new = copy.deepcopy(old)
            # Fields this manager applied before and no longer does are removed.
            scope = ("status",) if subresource == "status" else None
            for p, m in list(owners.items()):
                in_scope = (p[:1] == scope) if scope else (p[:1] != ("status",))
                if m == manager and in_scope and p not in paths:
                    del_path(new, p)
                    del owners[p]
            for p, v in paths.items():
                set_path(new, p, v)
                owners[p] = manager
            self._set_managed_fields(new, key)
            return self._commit(res, key, old, new), False

    def _set_managed_fields(self, obj: dict, key: tuple) -> None:
        by_manager: Dict[str, List[tuple]] = {}
        for p, m in self.owners.get(key, {}).items():
            by_manager.setdefault(m, []).append(p)
        obj["metadata"]["managedFields"] = [
            {"manager": m, "operation": "Apply", "apiVersion": obj.get("apiVersion", ""),
             "fieldsType": "FieldsV1", "fieldsV1": fields_v1(sorted(ps))}
            for m, ps in sorted(by_manager.items())]

    def delete(self, res: Resource, ns: str, name: str) -> dict:
        with self.cond:
            key = (res.group, res.plural, ns if res.namespaced else "", name)
            old = self.objects.pop(key, None)
            if old is None:
                raise not_found(res, name)
            self.owners.pop(key, None)
            gone = copy.deepcopy(old)
            gone["metadata"]["resourceVersion"] = self._next_rv()
            self._record("DELETED", res, gone)
            return gone

    def list(self, res: Resource, ns: Optional[str], selector) -> Tuple[List[dict], str]:
        with self.cond:
            items = [copy.deepcopy(o) for (g, p, ons, _), o in sorted(self.objects.items())
                     if (g, p) == res.key and (ns is None or ons == ns) and selector(o)]
            return items, str(self.rv)

    def compact(self) -> None:
        with self.cond:
            self.compacted = self.rv
            self.events.clear()

    def close_watches(self) -> None:
        with self.cond:
            self.watch_generation += 1
            self.cond.notify_all()


def not_found(res: Resource, name: str) -> ApiError:
    what = f"{res.plural}.{res.group}" if res.group else res.plural
    return ApiError(404, "NotFound", f'{what} "{name}" not found',
                    {"name": name, "group": res.group, "kind": res.plural})


def conflict(res: Resource, name: str) -> ApiError:
    what = f"{res.plural}.{res.group}" if res.group else res.plural
    return ApiError(409, "Conflict",
                    f'Operation cannot be fulfilled on {what} "{name}": the object has been '
                    "modified; please apply your changes to the latest version and try again",
                    {"name": name, "group": res.group, "kind": res.plural})


# ---------------------------------------------------------------------------------------------
# Selectors
# ---------------------------------------------------------------------------------------------


def make_selector(label_sel: str, field_sel: str):
    label_terms = [t.strip() for t in label_sel.split(",") if t.strip()]
    field_terms = [t.strip() for t in field_sel.split(",") if t.strip()]

    def matches(obj: dict) -> bool:
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        for t in label_terms:
            if "!=" in t:
                k, v = t.split("!=", 1)
                if labels.get(k.strip()) == v.strip():
                    return False
            elif "=" in t:
                k, v = t.split("=", 1)
                if labels.get(k.strip().rstrip("=")) != v.strip().lstrip("="):
                    return False
            elif t.startswith("!"):
                if t[1:] in labels:
                    return False
            elif t not in labels:
                return False
        for t in field_terms:
            k, _, v = t.partition("=")
            v = v.lstrip("=")
            if k == "metadata.name" and meta.get("name") != v:
                return False
            if k == "metadata.namespace" and meta.get("namespace", "") != v:
                return False
        return True

    return matches


# ---------------------------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kturn-test-apiserver"
    store: Store = None  # set by main
    token: str = ""
    forbidden: set = set()  # (group, plural) answered 403
    bookmark_interval = 1.0
    request_log: List[dict] = []
    log_lock = threading.Lock()

    def log_message(self, fmt, *args):  # quiet unless asked
        if self.server.verbose:
            sys.stderr.write("apiserver: " + (fmt % args) + "\n")

    # -- plumbing
    def _send_json(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self._log(code)

    def _log(self, code: int) -> None:
        url = urllib.parse.urlsplit(self.path)
        with self.log_lock:
            self.request_log.append({"method": self.command, "path": url.path,
                                     "query": url.query,
                                     "contentType": self.headers.get("Content-Type", ""),
                                     "code": code})

    def _body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _authorized(self) -> bool:
        if not self.token:
            return True
        return self.headers.get("Authorization", "") == f"Bearer {self.token}"

    def _route(self):
        """-> (resource, namespace or None, name or None, subresource or "", query)."""
        url = urllib.parse.urlsplit(self.path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
        parts = [p for p in url.path.split("/") if p]
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        ns = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            ns, rest = rest[1], rest[2:]
        elif len(rest) == 2 and rest[0] == "namespaces" and group == "":
            pass  # /api/v1/namespaces/<name>: the Namespace object itself
        if not rest or len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        res = self.store.resources.get((group, rest[0]))
        if res is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) == 3 else ""
        if sub not in ("", "status"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if res.namespaced and name is not None and ns is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        self.api_version = f"{group}/{version}" if group else version
        return res, ns, name, sub, query

    def _handle(self, fn) -> None:
        try:
            if self.path.startswith("/testctl/"):
                return self._testctl()
            if self.path.split("?")[0] in ("/healthz", "/readyz", "/livez"):
                data = b"ok"
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(data)
                return None
            if not self._authorized():
                self._body()
                raise ApiError(401, "Unauthorized", "Unauthorized")
            route = self._route()
            res, name, query = route[0], route[2], route[4]
            if res.key in self.forbidden:
                self._body()
                verb = {"POST": "create", "PUT": "update", "PATCH": "patch",
                        "DELETE": "delete"}.get(self.command, "get")
                if verb == "get" and name is None:
                    verb = "watch" if query.get("watch") in ("true", "1") else "list"
                raise ApiError(403, "Forbidden",
                               f'{res.plural}{"." + res.group if res.group else ""} is forbidden: '
                               f'User "kturn-test" cannot {verb} resource "{res.plural}" in API '
                               f'group "{res.group}"')
            fn(*route)
        except ApiError as e:
            self._send_json(e.status["code"], e.status)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True
        return None

    def _decode(self, raw: bytes, content_type: str) -> dict:
        try:
            if content_type.startswith("application/apply-patch+yaml"):
                obj = yaml.safe_load(raw.decode())
            else:
                obj = json.loads(raw.decode() or "null")
        except Exception as e:  # noqa: BLE001 — the client sent garbage: 400
            raise ApiError(400, "BadRequest", f"cannot decode body: {e}")
        if not isinstance(obj, dict):
            raise ApiError(400, "BadRequest", "body must be an object")
        return obj

    # -- verbs
    def do_GET(self):
        self._handle(self._get)

    def do_POST(self):
        self._handle(self._post)

    def do_PUT(self):
        self._handle(self._put)

    def do_PATCH(self):
        self._handle(self._patch)

    def do_DELETE(self):
        self._handle(self._delete)

    def _get(self, res, ns, name, sub, q):
        if name is not None:
            return self._send_json(200, self.store.get(res, ns or "", name))
        selector = make_selector(q.get("labelSelector", ""), q.get("fieldSelector", ""))
        if q.get("watch") in ("true", "1"):
            return self._watch(res, ns, selector, q)
        items, rv = self.store.list(res, ns, selector)
        if res.group in BUILTIN_GROUPS:
            for o in items:
                o.pop("apiVersion", None)
                o.pop("kind", None)
        self._send_json(200, {"kind": res.kind + "List", "apiVersion": self.api_version,
                              "metadata": {"resourceVersion": rv}, "items": items})

    def _post(self, res, ns, name, sub, q):
        obj = self._decode(self._body(), self.headers.get("Content-Type", ""))
        if name is not None or (res.namespaced and ns is None):
            raise ApiError(405, "MethodNotAllowed", "POST is allowed on collections only")
        self._send_json(201, self.store.create(res, ns or "", obj))

    def _put(self, res, ns, name, sub, q):
        obj = self._decode(self._body(), self.headers.get("Content-Type", ""))
        if name is None:
            raise ApiError(405, "MethodNotAllowed", "PUT needs a name")
        if (obj.get("metadata") or {}).get("name", name) != name:
            raise ApiError(400, "BadRequest", "the name of the object does not match the URL")
        self._send_json(200, self.store.update(res, ns or "", name, obj, sub))

    def _patch(self, res, ns, name, sub, q):
        ctype = self.headers.get("Content-Type", "").split(";")[0].strip()
        obj = self._decode(self._body(), ctype)
        if name is None:
            raise ApiError(405, "MethodNotAllowed", "PATCH needs a name")
        if ctype == "application/apply-patch+yaml":
            manager = q.get("fieldManager", "")
            if not manager:
                raise ApiError(400, "BadRequest",
                               "PATCH, application/apply-patch+yaml: fieldManager is required")
            force = q.get("force", "false") == "true"
            out, created = self.store.apply(res, ns or "", name, obj, manager, force, sub)
            return self._send_json(201 if created else 200, out)
        if ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            return self._send_json(200, self.store.merge(res, ns or "", name, obj, sub))
        raise ApiError(415, "UnsupportedMediaType",
                       f"the body of the request was in an unknown format - accepted media "
                       f"types include: application/merge-patch+json, "
                       f"application/strategic-merge-patch+json, application/apply-patch+yaml")

    def _delete(self, res, ns, name, sub, q):
        self._body()
        if name is None:
            raise ApiError(405, "MethodNotAllowed", "DELETE needs a name")
        gone = self.store.delete(res, ns or "", name)
        self._send_json(200, status_obj(200, "", "", {"name": name, "group": res.group,
                                                      "kind": res.plural,
                                                      "uid": gone["metadata"]["uid"]}))

    # -- watch
    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _event(self, etype: str, obj: dict) -> None:
        self._chunk(json.dumps({"type": etype, "object": obj}).encode() + b"\n")

    def _watch(self, res: Resource, ns: Optional[str], selector, q: dict) -> None:
        store = self.store
        store.watches_released.wait(30)
        rv_param = q.get("resourceVersion", "")
        try:
            since = int(rv_param) if rv_param not in ("", "0") else None
        except ValueError:
            raise ApiError(400, "BadRequest", f"invalid resourceVersion {rv_param!r}")
        bookmarks = q.get("allowWatchBookmarks") == "true"
        timeout = float(q.get("timeoutSeconds") or 1800)
        deadline = time.monotonic() + timeout
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._log(200)
        self.close_connection = True

        def visible(key, obj) -> bool:
            meta = obj.get("metadata") or {}
            return key == res.key and (ns is None or meta.get("namespace", "") == ns) \
                and selector(obj)

        with store.cond:
            generation = store.watch_generation
            if since is not None and since < store.compacted:
                pending = None
            elif since is None:
                pending = [("ADDED", o) for (g, p, _, _), o in sorted(store.objects.items())
                           if visible((g, p), o)]
                pending = [(t, copy.deepcopy(o)) for t, o in pending]
                since = store.rv
            else:
                pending = []
        if pending is None:
            self._event("ERROR", status_obj(
                410, "Expired", f"too old resource version: {since} ({store.compacted})"))
            self._chunk(b"")
            return
        for etype, obj in pending:
            self._event(etype, obj)
        last_bookmark = time.monotonic()
        while True:
            with store.cond:
                while True:
                    if store.watch_generation != generation:
                        batch = None
                        break
                    batch = [(t, o) for (erv, t, key, o) in store.events
                             if erv > since and visible(key, o)]
                    newest = store.rv
                    left = deadline - time.monotonic()
                    wait_bm = (last_bookmark + self.bookmark_interval - time.monotonic()
                               if bookmarks else left)
                    if batch or left <= 0 or wait_bm <= 0:
                        break
                    store.cond.wait(min(left, wait_bm, 0.5))
            if batch is None or time.monotonic() >= deadline:
                break
            for etype, obj in batch:
                self._event(etype, copy.deepcopy(obj))
                since = int(obj["metadata"]["resourceVersion"])
            if bookmarks and time.monotonic() - last_bookmark >= self.bookmark_interval:
                since = max(since, newest) if not batch else since
                self._event("BOOKMARK", {"kind": res.kind, "apiVersion": self.api_version,
                                         "metadata": {"resourceVersion": str(since)}})
                last_bookmark = time.monotonic()
        self._chunk(b"")

    # -- test control
    def _testctl(self) -> None:
        self._body()
        path = self.path.split("?")[0]
        if path == "/testctl/compact" and self.command == "POST":
            self.store.compact()
            return self._send_json(200, {"compacted": self.store.compacted})
        if path == "/testctl/close-watches" and self.command == "POST":
            self.store.close_watches()
            return self._send_json(200, {})
        if path == "/testctl/hold-watches" and self.command == "POST":
            self.store.watches_released.clear()
            return self._send_json(200, {})
        if path == "/testctl/release-watches" and self.command == "POST":
            self.store.watches_released.set()
            return self._send_json(200, {})
        if path == "/testctl/requests" and self.command == "GET":
            with self.log_lock:
                log = list(self.request_log)
            return self._send_json(200, {"requests": log})
        if path == "/testctl/state" and self.command == "GET":
            with self.store.cond:
                items = list(copy.deepcopy(self.store.objects).values())
            return self._send_json(200, {"resourceVersion": str(self.store.rv),
                                         "items": items})
        raise ApiError(404, "NotFound", "unknown test control endpoint")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    verbose = False

    def handle_error(self, request, client_address):
        # A client that hangs up or fails the TLS handshake is normal in tests (cancelled
        # watches, reconnects); tracebacks only when asked for.
        if self.verbose:
            super().handle_error(request, client_address)


# ---------------------------------------------------------------------------------------------
# Start-up
# ---------------------------------------------------------------------------------------------


def load_manifests(store: Store, paths: List[str]) -> int:
    files: List[str] = []
    for p in paths:
        if os.path.isdir(p):
            files += [os.path.join(p, f) for f in sorted(os.listdir(p))
                      if f.endswith((".yaml", ".yml", ".json"))]
        else:
            files.append(p)
    n = 0
    for f in files:
        with open(f) as fh:
            for doc in yaml.safe_load_all(fh):
                if not isinstance(doc, dict):
                    continue
                docs = doc.get("items", []) if doc.get("kind", "").endswith("List") else [doc]
                for obj in docs:
                    res = store.resource_for_object(obj)
                    ns = (obj.get("metadata") or {}).get("namespace") or "default"
                    store.create(res, ns, obj)
                    n += 1
    return n


def resource_key(name: str) -> Tuple[str, str]:
    """"udproutes.gateway.networking.k8s.io" -> (group, plural), as a CRD is named; "secrets" ->
    ("", "secrets")."""
    plural, _, group = name.partition(".")
    return (group, plural)


def make_cert(workdir: str) -> Tuple[str, str]:
    cert = os.path.join(workdir, "apiserver.crt")
    key = os.path.join(workdir, "apiserver.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                    "-subj", "/CN=kturn-test-apiserver", "-addext",
                    "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", key, "-out", cert],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cert, key


def write_kubeconfig(path: str, server: str, token: str, ca_pem: Optional[bytes]) -> None:
    cluster = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    user = {"token": token} if token else {}
    cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "test",
           "clusters": [{"name": "test", "cluster": cluster}],
           "users": [{"name": "test", "user": user}],
           "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}]}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        yaml.safe_dump(cfg, f)
    os.replace(tmp, path)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--tls", action="store_true", help="serve HTTPS with a self-signed cert")
    p.add_argument("--cert-dir", help="where the certificate goes (default: a temp dir)")
    p.add_argument("--token", default="", help="required bearer token (empty: none)")
    p.add_argument("--manifests", action="append", default=[],
                   help="file or directory of multi-document YAML to create at start")
    p.add_argument("--ready-file", help="write the port here once serving")
    p.add_argument("--kubeconfig-out", help="write a kubeconfig for this server here")
    p.add_argument("--history", type=int, default=10000, help="watch events kept")
    p.add_argument("--bookmark-interval", type=float, default=1.0)
    p.add_argument("--not-served", action="append", default=[], metavar="PLURAL[.GROUP]",
                   help="a kind whose CRD is not installed: 404 (repeatable)")
    p.add_argument("--forbid", action="append", default=[], metavar="PLURAL[.GROUP]",
                   help="a kind every request for which is 403 Forbidden (repeatable)")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args()
    if args.host not in ("127.0.0.1", "::1", "localhost"):
        print("kturn-test-apiserver: loopback only", file=sys.stderr)
        return 2

    store = Store(args.history)
    Handler.store = store
    Handler.token = args.token
    Handler.bookmark_interval = args.bookmark_interval
    try:
        load_manifests(store, args.manifests)
    except (ApiError, OSError, yaml.YAMLError) as e:
        print(f"kturn-test-apiserver: manifests: {e}", file=sys.stderr)
        return 2
    for name in args.not_served:
        store.resources.pop(resource_key(name), None)
    Handler.forbidden = {resource_key(name) for name in args.forbid}

    server = Server((args.host, args.port), Handler)
    server.verbose = args.verbose
    ca_pem = None
    if args.tls:
        import tempfile
        cert_dir = args.cert_dir or tempfile.mkdtemp(prefix="kturn-apiserver-")
        cert, key = make_cert(cert_dir)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(cert, key)
        # The handshake runs in the request's thread, not in accept() on the serving thread.
        server.socket = ctx.wrap_socket(server.socket, server_side=True,
                                        do_handshake_on_connect=False)
        with open(cert, "rb") as f:
            ca_pem = f.read()
    port = server.server_address[1]
    url = f"{'https' if args.tls else 'http'}://{args.host}:{port}"
    if args.kubeconfig_out:
        write_kubeconfig(args.kubeconfig_out, url, args.token, ca_pem)
    if args.ready_file:
        with open(args.ready_file + ".tmp", "w") as f:
            f.write(f"{port}\n")
        os.replace(args.ready_file + ".tmp", args.ready_file)
    print(f"kturn-test-apiserver: serving {url}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
