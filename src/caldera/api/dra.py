"""resource.k8s.io/v1 objects for DynamicResources: DeviceClass, ResourceSlice, ResourceClaim and
ResourceClaimTemplate, decoded and validated (a bad field is a one-line InputError naming the
object), plus the claims kube's resourceclaim controller would create for pods that name a
ResourceClaimTemplate.

What is read: DeviceClass spec.selectors[].cel.expression; ResourceSlice spec.driver,
spec.pool.name, spec.nodeName or spec.allNodes, spec.devices[] (name, attributes, capacity);
ResourceClaim spec.devices.requests[].exactly (deviceClassName, selectors[].cel.expression,
allocationMode ExactCount/All, count) and status.allocation.devices.results (a claim allocated
already holds its devices); ResourceClaimTemplate spec.spec (the claim spec). Not modelled (an
InputError says so): firstAvailable (prioritized lists), constraints, admin access, consumable
capacity, ResourceSlice nodeSelector / perDeviceNodeSelection.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import InputError
from .quantity import parse_quantity

API_VERSION = "resource.k8s.io/v1"
KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate")
EXACT_COUNT = "ExactCount"
ALL = "All"


@dataclass
class Request:
    name: str
    device_class: str
    selectors: tuple[str, ...] = ()
    mode: str = EXACT_COUNT
    count: int = 1


@dataclass
class DeviceResult:
    request: str
    driver: str
    pool: str
    device: str

    def as_dict(self) -> dict[str, str]:
        return {"driver": self.driver, "pool": self.pool, "device": self.device, "request": self.request}


@dataclass
class ResourceClaim:
    namespace: str
    name: str
    requests: list[Request]
    allocation: list[DeviceResult] | None = None      # status.allocation.devices.results
    allocated_node: str | None = None                 # the node its devices are on (None: any)
    reserved_for: list[str] = field(default_factory=list)   # pod keys
    owner_pod: str = ""        # ns/name of the pod a template claim was made for

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class Device:
    driver: str
    pool: str
    name: str
    node: str | None          # None: allNodes
    attributes: dict[str, dict[str, Any]]     # domain -> {name: value}
    capacity: dict[str, dict[str, int]]       # domain -> {name: value}


@dataclass
class DeviceClass:
    name: str
    selectors: tuple[str, ...]


@dataclass
class DraObjects:
    classes: dict[str, DeviceClass] = field(default_factory=dict)
    devices: list[Device] = field(default_factory=list)
    claims: dict[str, ResourceClaim] = field(default_factory=dict)           # ns/name
    templates: dict[str, dict[str, Any]] = field(default_factory=dict)      # ns/name -> claim spec
    where: dict[str, str] = field(default_factory=dict)                     # "Kind ns/name" -> source

    def empty(self) -> bool:
        return not (self.classes or self.devices or self.claims or self.templates)

    def copy(self) -> DraObjects:
        """A copy whose claims a pass may allocate (the read-only parts are shared)."""
        claims = {k: replace(c, allocation=list(c.allocation) if c.allocation is not None else None,
                             reserved_for=list(c.reserved_for)) for k, c in self.claims.items()}
        return DraObjects(self.classes, self.devices, claims, self.templates, self.where)


def _obj(kind: str, doc: dict[str, Any]) -> tuple[str, str, str]:
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise InputError("metadata.name: expected a non-empty string", obj=kind)
    ns = meta.get("namespace") or "default"
    if not isinstance(ns, str):
        raise InputError("metadata.namespace: expected a string", obj=f"{kind} {meta['name']}")
    return meta["name"], ns, f"{kind} {meta['name']}" if kind in ("DeviceClass", "ResourceSlice") \
        else f"{kind} {ns}/{meta['name']}"


def _map(v: Any, what: str, obj: str) -> dict[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise InputError(f"{what}: expected a mapping, got {type(v).__name__}", obj=obj)
    return v


def _list(v: Any, what: str, obj: str) -> list[Any]:
    if v is None:
        return []
    if not isinstance(v, list):
        raise InputError(f"{what}: expected a list, got {type(v).__name__}", obj=obj)
    return v


def _str(v: Any, what: str, obj: str, required: bool = True) -> str:
    if v is None and not required:
        return ""
    if not isinstance(v, str) or (required and not v):
        raise InputError(f"{what}: expected a non-empty string, got {v!r}", obj=obj)
    return v


def _selectors(v: Any, what: str, obj: str) -> tuple[str, ...]:
    from .dracel import compile_selector
    out = []
    for j, s in enumerate(_list(v, what, obj)):
        cel = _map(_map(s, f"{what}[{j}]", obj).get("cel"), f"{what}[{j}].cel", obj)
        expr = _str(cel.get("expression"), f"{what}[{j}].cel.expression", obj)
        compile_selector(expr, f"{what}[{j}].cel.expression", obj)
        out.append(expr)
    return tuple(out)


def decode_device_class(doc: dict[str, Any]) -> DeviceClass:
    name, _, obj = _obj("DeviceClass", doc)
    spec = _map(doc.get("spec"), "spec", obj)
    return DeviceClass(name, _selectors(spec.get("selectors"), "spec.selectors", obj))


def _attr_value(v: Any, what: str, obj: str) -> Any:
    v = _map(v, what, obj)
    for k in ("int", "bool", "string", "version"):
        if k in v:
            x = v[k]
            ok = {"int": isinstance(x, int) and not isinstance(x, bool), "bool": isinstance(x, bool),
                  "string": isinstance(x, str), "version": isinstance(x, str)}[k]
            if not ok:
                raise InputError(f"{what}.{k}: bad value {x!r}", obj=obj)
            return x
    raise InputError(f"{what}: expected one of int, bool, string, version", obj=obj)


def _qualified(key: str, driver: str) -> tuple[str, str]:
    if "/" in key:
        d, n = key.split("/", 1)
        return d, n
    return driver, key


def decode_resource_slice(doc: dict[str, Any]) -> list[Device]:
    _name, _, obj = _obj("ResourceSlice", doc)
    spec = _map(doc.get("spec"), "spec", obj)
    driver = _str(spec.get("driver"), "spec.driver", obj)
    pool = _str(_map(spec.get("pool"), "spec.pool", obj).get("name"), "spec.pool.name", obj)
    node_name = spec.get("nodeName")
    if spec.get("nodeSelector") is not None or spec.get("perDeviceNodeSelection"):
        raise InputError("spec.nodeSelector/perDeviceNodeSelection: not supported by caldera; "
                         "use spec.nodeName or spec.allNodes", obj=obj)
    if node_name is not None:
        node: str | None = _str(node_name, "spec.nodeName", obj)
    elif spec.get("allNodes") is True:
        node = None
    else:
        raise InputError("spec: one of nodeName or allNodes: true is required", obj=obj)
    devices = []
    for j, d in enumerate(_list(spec.get("devices"), "spec.devices", obj)):
        w = f"spec.devices[{j}]"
        d = _map(d, w, obj)
        dname = _str(d.get("name"), f"{w}.name", obj)
        attrs: dict[str, dict[str, Any]] = {}
        for k, v in _map(d.get("attributes"), f"{w}.attributes", obj).items():
            dom, n = _qualified(str(k), driver)
            attrs.setdefault(dom, {})[n] = _attr_value(v, f"{w}.attributes[{k}]", obj)
        cap: dict[str, dict[str, int]] = {}
        for k, v in _map(d.get("capacity"), f"{w}.capacity", obj).items():
            dom, n = _qualified(str(k), driver)
            val = _map(v, f"{w}.capacity[{k}]", obj).get("value")
            try:
                q = parse_quantity(val)
            except (ValueError, TypeError, InputError) as e:
                raise InputError(f"{w}.capacity[{k}].value: bad quantity {val!r} ({e})", obj=obj) from None
            cap.setdefault(dom, {})[n] = int(q)
        devices.append(Device(driver, pool, dname, node, attrs, cap))
    return devices


def decode_claim_spec(spec: Any, what: str, obj: str) -> list[Request]:
    spec = _map(spec, what, obj)
    devs = _map(spec.get("devices"), f"{what}.devices", obj)
    if devs.get("constraints"):
        raise InputError(f"{what}.devices.constraints: not supported by caldera", obj=obj)
    out = []
    for j, r in enumerate(_list(devs.get("requests"), f"{what}.devices.requests", obj)):
        w = f"{what}.devices.requests[{j}]"
        r = _map(r, w, obj)
        rname = _str(r.get("name"), f"{w}.name", obj)
        if r.get("firstAvailable"):
            raise InputError(f"{w}.firstAvailable: prioritized lists are not supported by caldera", obj=obj)
        ex = _map(r.get("exactly"), f"{w}.exactly", obj)
        if not ex:
            raise InputError(f"{w}.exactly: required", obj=obj)
        if ex.get("adminAccess"):
            raise InputError(f"{w}.exactly.adminAccess: not supported by caldera", obj=obj)
        mode = ex.get("allocationMode") or EXACT_COUNT
        if mode not in (EXACT_COUNT, ALL):
            raise InputError(f"{w}.exactly.allocationMode: must be ExactCount or All, got {mode!r}", obj=obj)
        count = ex.get("count", 1) if mode == EXACT_COUNT else 0
        if mode == EXACT_COUNT and (not isinstance(count, int) or isinstance(count, bool) or count < 1):
            raise InputError(f"{w}.exactly.count: must be a positive integer, got {count!r}", obj=obj)
        out.append(Request(rname, _str(ex.get("deviceClassName"), f"{w}.exactly.deviceClassName", obj),
                           _selectors(ex.get("selectors"), f"{w}.exactly.selectors", obj), mode, count))
    return out


def decode_resource_claim(doc: dict[str, Any]) -> ResourceClaim:
    name, ns, obj = _obj("ResourceClaim", doc)
    c = ResourceClaim(ns, name, decode_claim_spec(doc.get("spec"), "spec", obj))
    status = _map(doc.get("status"), "status", obj)
    alloc = _map(status.get("allocation"), "status.allocation", obj)
    if alloc:
        res = []
        for j, r in enumerate(_list(_map(alloc.get("devices"), "status.allocation.devices", obj).get("results"),
                                    "status.allocation.devices.results", obj)):
            w = f"status.allocation.devices.results[{j}]"
            r = _map(r, w, obj)
            res.append(DeviceResult(_str(r.get("request"), f"{w}.request", obj),
                                    _str(r.get("driver"), f"{w}.driver", obj),
                                    _str(r.get("pool"), f"{w}.pool", obj),
                                    _str(r.get("device"), f"{w}.device", obj)))
        c.allocation = res
        for term in _list(_map(alloc.get("nodeSelector"), "status.allocation.nodeSelector", obj)
                          .get("nodeSelectorTerms"), "status.allocation.nodeSelector.nodeSelectorTerms", obj):
            for f in _list(_map(term, "nodeSelectorTerms[]", obj).get("matchFields"), "matchFields", obj):
                if isinstance(f, dict) and f.get("key") == "metadata.name" and f.get("operator") == "In" \
                        and isinstance(f.get("values"), list) and len(f["values"]) == 1:
                    c.allocated_node = str(f["values"][0])
    for j, ref in enumerate(_list(status.get("reservedFor"), "status.reservedFor", obj)):
        ref = _map(ref, f"status.reservedFor[{j}]", obj)
        if ref.get("resource") == "pods" and isinstance(ref.get("name"), str):
            c.reserved_for.append(f"{ns}/{ref['name']}")
    return c


def decode_template(doc: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    name, ns, obj = _obj("ResourceClaimTemplate", doc)
    spec = _map(_map(doc.get("spec"), "spec", obj).get("spec"), "spec.spec", obj)
    decode_claim_spec(spec, "spec.spec", obj)      # validate now
    return f"{ns}/{name}", spec


def add_object(dra: DraObjects, doc: dict[str, Any], source: str) -> None:
    """Decode one resource.k8s.io/v1 object into `dra` (InputError names `source`)."""
    kind = doc.get("kind")
    if doc.get("apiVersion") != API_VERSION:
        raise InputError(f"apiVersion {doc.get('apiVersion')!r} is not served here; use {API_VERSION}",
                         source=source, obj=str(kind))
    try:
        if kind == "DeviceClass":
            dc = decode_device_class(doc)
            dra.classes[dc.name] = dc
        elif kind == "ResourceSlice":
            dra.devices.extend(decode_resource_slice(doc))
        elif kind == "ResourceClaim":
            c = decode_resource_claim(doc)
            dra.claims[c.key] = c
        elif kind == "ResourceClaimTemplate":
            k, spec = decode_template(doc)
            dra.templates[k] = spec
    except InputError as e:
        if e.source is None:
            raise InputError(e.problem, source=source, obj=e.obj) from None
        raise


# ---- pods' spec.resourceClaims -----------------------------------------------------------------
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"    # the API server's generateName alphabet


def generated_claim_name(pod_ns: str, pod_name: str, pod_claim: str) -> str:
    """The name kube's resourceclaim controller gives a template's claim: <pod>-<claim>- (both
    cut when longer than 57 characters, as the controller cuts them) + 5 characters; the API
    server draws those at random, Caldera derives them from the pod and claim names."""
    base = pod_name + "-" + pod_claim + "-"
    if len(base) > 57:
        base = pod_name[:len(pod_name) * 57 // len(base)] + "-" + pod_claim[:len(pod_claim) * 57 // len(base)]
    h = hashlib.sha256(f"{pod_ns}/{pod_name}/{pod_claim}".encode()).digest()
    return base + "".join(_ALPHANUMS[b % len(_ALPHANUMS)] for b in h[:5])


def pod_claim_refs(pod_raw: dict[str, Any], where: str) -> list[tuple[str, str, str]]:
    """(pod claim name, resourceClaimName, resourceClaimTemplateName) of spec.resourceClaims."""
    out = []
    for j, rc in enumerate(_list((pod_raw.get("spec") or {}).get("resourceClaims"), "spec.resourceClaims", where)):
        w = f"spec.resourceClaims[{j}]"
        rc = _map(rc, w, where)
        n = _str(rc.get("name"), f"{w}.name", where)
        cn = rc.get("resourceClaimName") or ""
        tn = rc.get("resourceClaimTemplateName") or ""
        if bool(cn) == bool(tn):
            raise InputError(f"{w}: exactly one of resourceClaimName or resourceClaimTemplateName is required",
                             obj=where)
        out.append((n, _str(cn, f"{w}.resourceClaimName", where, False),
                    _str(tn, f"{w}.resourceClaimTemplateName", where, False)))
    return out


def template_claim_status_name(pod_raw: dict[str, Any], pod_claim: str) -> str | None:
    for st in (pod_raw.get("status") or {}).get("resourceClaimStatuses") or []:
        if isinstance(st, dict) and st.get("name") == pod_claim:
            return st.get("resourceClaimName") or None
    return None
