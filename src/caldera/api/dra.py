"""resource.k8s.io/v1 objects for DynamicResources: DeviceClass, ResourceSlice, ResourceClaim and
ResourceClaimTemplate, decoded and validated (a bad field is a one-line InputError naming the
object), plus the claims kube's resourceclaim controller would create for pods that name a
ResourceClaimTemplate.

What is read: DeviceClass spec.selectors[].cel.expression; ResourceSlice spec.driver,
spec.pool.name, spec.nodeName or spec.allNodes, spec.devices[] (name, attributes, capacity);
ResourceClaim spec.devices.requests[].exactly (deviceClassName, selectors[].cel.expression,
allocationMode ExactCount/All, count, adminAccess), firstAvailable subrequests, constraints
(matchAttribute) and status.allocation (devices.results, nodeSelector: a claim allocated already
holds its devices); ResourceSlice nodeSelector; ResourceClaimTemplate spec.spec (the claim spec).
Fields whose feature gate is off by default in v1.35 (distinctAttribute: DRAConsumableCapacity;
perDeviceNodeSelection, sharedCounters, consumesCounters: DRAPartitionableDevices; device taints
and tolerations: DRADeviceTaints; bindingConditions: DRADeviceBindingConditions) are refused with
an InputError saying so.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import InputError
from .quantity import parse_quantity
from .selectors import NodeSelector, parse_node_selector

API_VERSION = "resource.k8s.io/v1"
KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate")
EXACT_COUNT = "ExactCount"
ALL = "All"


ADMIN_NS_LABEL = "resource.kubernetes.io/admin-access"    # resourceapi.DRAAdminNamespaceLabelKey
FIRST_AVAILABLE_MAX = 8        # resourceapi.FirstAvailableDeviceRequestMaxSize


def _gate_off(what: str, gate: str) -> str:
    return (f"{what}: needs the {gate} feature gate, which is off by default in Kubernetes v1.35 "
            "(caldera models the default gates)")


@dataclass
class Request:
    """A request (exactly) or one of a request's firstAvailable subrequests; a request with
    subrequests has them in `subrequests` and no class of its own."""
    name: str
    device_class: str
    selectors: tuple[str, ...] = ()
    mode: str = EXACT_COUNT
    count: int = 1
    admin_access: bool = False
    subrequests: tuple[Request, ...] = ()


@dataclass(frozen=True)
class Constraint:
    """spec.devices.constraints[]: matchAttribute over the named requests (none: all)."""
    requests: tuple[str, ...]
    attribute: str               # fully qualified: <domain>/<name>


@dataclass
class DeviceResult:
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool = False

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"driver": self.driver, "pool": self.pool, "device": self.device, "request": self.request}
        if self.admin_access:
            d["adminAccess"] = True
        return d


@dataclass
class ResourceClaim:
    namespace: str
    name: str
    requests: list[Request]
    allocation: list[DeviceResult] | None = None      # status.allocation.devices.results
    allocated_node: str | None = None                 # the node its devices are on (None: any)
    reserved_for: list[str] = field(default_factory=list)   # pod keys
    owner_pod: str = ""        # ns/name of the pod a template claim was made for
    # metadata read by `caldera run` (kube's PreEnqueue checks of a claim read from the API): its
    # uid, whether it is being deleted, and the uid of its controller (the pod of a template claim)
    uid: str = ""
    deleting: bool = False
    controller_uid: str = ""
    constraints: list[Constraint] = field(default_factory=list)
    # status.allocation.nodeSelector (None: available on every node), raw and parsed
    node_selector: dict[str, Any] | None = None
    available_on: NodeSelector | None = None
    # spec.devices.config[] (opaque driver parameters, with the requests they apply to), as given:
    # copied into status.allocation.devices.config at allocation (allocation_config)
    config: list[dict[str, Any]] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class Device:
    driver: str
    pool: str
    name: str
    node: str | None          # None: allNodes (or a nodeSelector)
    attributes: dict[str, dict[str, Any]]     # domain -> {name: value} (versions as dracel.Semver)
    capacity: dict[str, dict[str, Any]]       # domain -> {name: exact value (Fraction)}
    selector: NodeSelector | None = None      # the slice's spec.nodeSelector
    raw_selector: dict[str, Any] | None = None


@dataclass
class DeviceClass:
    name: str
    selectors: tuple[str, ...]
    config: tuple[dict[str, Any], ...] = ()      # spec.config[] (opaque driver parameters), as given


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
    return DeviceClass(name, _selectors(spec.get("selectors"), "spec.selectors", obj),
                       tuple(_configs(spec.get("config"), "spec.config", obj, with_requests=False)))


def _configs(value: Any, what: str, obj: str, *, with_requests: bool) -> list[dict[str, Any]]:
    """spec.config[] of a DeviceClass / spec.devices.config[] of a claim: each names its driver's
    opaque parameters (`opaque: {driver, parameters}`, required as the API server requires it) and,
    in a claim, the requests it applies to (none: all)."""
    out = []
    for j, c in enumerate(_list(value, what, obj)):
        w = f"{what}[{j}]"
        c = _map(c, w, obj)
        opaque = _map(c.get("opaque"), f"{w}.opaque", obj)
        if not opaque:
            raise InputError(f"{w}.opaque: Required value", obj=obj)
        _str(opaque.get("driver"), f"{w}.opaque.driver", obj)
        if opaque.get("parameters") is None:
            raise InputError(f"{w}.opaque.parameters: Required value", obj=obj)
        if with_requests:
            for x in _list(c.get("requests"), f"{w}.requests", obj):
                _str(x, f"{w}.requests[]", obj)
        out.append(c)
    return out


def claim_config(spec: Any, what: str, obj: str) -> list[dict[str, Any]]:
    """A ResourceClaimSpec's spec.devices.config[] (see _configs)."""
    devs = _map(_map(spec, what, obj).get("devices"), f"{what}.devices", obj)
    return _configs(devs.get("config"), f"{what}.devices.config", obj, with_requests=True)


def allocation_config(claim: ResourceClaim, classes: dict[str, DeviceClass]) -> list[dict[str, Any]]:
    """status.allocation.devices.config as kube's structured allocator fills it: each class's configs
    once (source FromClass), with the names of the requests (or chosen `<request>/<subrequest>`)
    that used the class, in request order; then the claim's configs (FromClaim) that apply to all
    requests, to a request, or to the chosen subrequest of a request."""
    chosen: dict[str, str] = {}          # request -> its chosen subrequest (firstAvailable)
    for r in claim.allocation or []:
        if "/" in r.request:
            parent, sub_name = r.request.split("/", 1)
            chosen[parent] = sub_name
    out: list[dict[str, Any]] = []
    by_class: dict[str, list[dict[str, Any]]] = {}
    for req in claim.requests:
        name, cls_name = req.name, req.device_class
        if req.subrequests:
            sub = next((x for x in req.subrequests if x.name == chosen.get(req.name)), None)
            if sub is None:
                continue
            name, cls_name = f"{req.name}/{sub.name}", sub.device_class
        cls = classes.get(cls_name)
        if cls is None:
            continue
        if cls_name in by_class:
            for c in by_class[cls_name]:
                c["requests"].append(name)
            continue
        added = [{"source": "FromClass", "requests": [name], "opaque": dict(c["opaque"])} for c in cls.config]
        by_class[cls_name] = added
        out.extend(added)
    for c in claim.config:
        reqs = list(c.get("requests") or [])
        if not reqs:            # applies to every request (requests omitted, as in the API)
            out.append({"source": "FromClaim", "opaque": dict(c["opaque"])})
            continue
        for req in claim.requests:      # once per request it names (as kube appends it)
            if req.name in reqs or (req.subrequests and f"{req.name}/{chosen.get(req.name)}" in reqs):
                out.append({"source": "FromClaim", "requests": list(reqs), "opaque": dict(c["opaque"])})
    return out


def _attr_value(v: Any, what: str, obj: str) -> Any:
    from .dracel import parse_semver, semver_error
    v = _map(v, what, obj)
    for k in ("int", "bool", "string", "version"):
        if k in v:
            x = v[k]
            ok = {"int": isinstance(x, int) and not isinstance(x, bool), "bool": isinstance(x, bool),
                  "string": isinstance(x, str), "version": isinstance(x, str)}[k]
            if not ok:
                raise InputError(f"{what}.{k}: bad value {x!r}", obj=obj)
            if k == "version":
                err = semver_error(x)
                if err is not None:
                    raise InputError(f"{what}.version: must be a semantic version (semver 2.0.0): {err}", obj=obj)
                return parse_semver(x)
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
    for k, gate in (("perDeviceNodeSelection", "DRAPartitionableDevices"),
                    ("sharedCounters", "DRAPartitionableDevices")):
        if spec.get(k):
            raise InputError(_gate_off(f"spec.{k}", gate), obj=obj)
    given = [k for k in ("nodeName", "nodeSelector", "allNodes") if spec.get(k) not in (None, False, "")]
    if len(given) > 1:
        raise InputError(f"spec: exactly one of nodeName, nodeSelector or allNodes: true is required, "
                         f"got {', '.join(given)}", obj=obj)
    sel: NodeSelector | None = None
    raw_sel: dict[str, Any] | None = None
    if node_name is not None:
        node: str | None = _str(node_name, "spec.nodeName", obj)
    elif spec.get("nodeSelector") is not None:
        node = None
        raw_sel = _map(spec.get("nodeSelector"), "spec.nodeSelector", obj)
        try:
            sel = parse_node_selector(raw_sel, "spec.nodeSelector")
        except InputError as e:
            raise InputError(e.problem, obj=obj) from None
        if len(sel.terms) != 1:    # API validation: exactly one term
            raise InputError(f"spec.nodeSelector.nodeSelectorTerms: must have exactly one term, "
                             f"got {len(sel.terms)}", obj=obj)
    elif spec.get("allNodes") is True:
        node = None
    else:
        raise InputError("spec: one of nodeName, nodeSelector or allNodes: true is required", obj=obj)
    devices = []
    for j, d in enumerate(_list(spec.get("devices"), "spec.devices", obj)):
        w = f"spec.devices[{j}]"
        d = _map(d, w, obj)
        dname = _str(d.get("name"), f"{w}.name", obj)
        for k, gate in (("consumesCounters", "DRAPartitionableDevices"), ("nodeName", "DRAPartitionableDevices"),
                        ("nodeSelector", "DRAPartitionableDevices"), ("allNodes", "DRAPartitionableDevices"),
                        ("taints", "DRADeviceTaints"), ("bindingConditions", "DRADeviceBindingConditions"),
                        ("bindingFailureConditions", "DRADeviceBindingConditions"),
                        ("allowMultipleAllocations", "DRAConsumableCapacity")):
            if d.get(k):
                raise InputError(_gate_off(f"{w}.{k}", gate), obj=obj)
        attrs: dict[str, dict[str, Any]] = {}
        for k, v in _map(d.get("attributes"), f"{w}.attributes", obj).items():
            dom, n = _qualified(str(k), driver)
            attrs.setdefault(dom, {})[n] = _attr_value(v, f"{w}.attributes[{k}]", obj)
        cap: dict[str, dict[str, Any]] = {}
        for k, v in _map(d.get("capacity"), f"{w}.capacity", obj).items():
            dom, n = _qualified(str(k), driver)
            val = _map(v, f"{w}.capacity[{k}]", obj).get("value")
            try:
                q = parse_quantity(val)
            except (ValueError, TypeError, InputError) as e:
                raise InputError(f"{w}.capacity[{k}].value: bad quantity {val!r} ({e})", obj=obj) from None
            if _map(v, f"{w}.capacity[{k}]", obj).get("requestPolicy") is not None:
                raise InputError(_gate_off(f"{w}.capacity[{k}].requestPolicy", "DRAConsumableCapacity"), obj=obj)
            cap.setdefault(dom, {})[n] = q
        devices.append(Device(driver, pool, dname, node, attrs, cap, sel, raw_sel))
    return devices


def _exact(ex: dict[str, Any], name: str, w: str, obj: str, sub: bool) -> Request:
    """An ExactDeviceRequest (`exactly`) or a DeviceSubRequest (sub: no adminAccess)."""
    for k, gate in (("tolerations", "DRADeviceTaints"), ("capacity", "DRAConsumableCapacity")):
        if ex.get(k):
            raise InputError(_gate_off(f"{w}.{k}", gate), obj=obj)
    if sub and "adminAccess" in ex:
        raise InputError(f"{w}.adminAccess: not a field of a subrequest (admin access is only for exactly)",
                         obj=obj)
    mode = ex.get("allocationMode") or EXACT_COUNT
    if mode not in (EXACT_COUNT, ALL):
        raise InputError(f"{w}.allocationMode: must be ExactCount or All, got {mode!r}", obj=obj)
    count = ex.get("count", 1) if mode == EXACT_COUNT else 0
    if mode == EXACT_COUNT and (not isinstance(count, int) or isinstance(count, bool) or count < 1):
        raise InputError(f"{w}.count: must be a positive integer, got {count!r}", obj=obj)
    admin = ex.get("adminAccess")
    if admin is not None and not isinstance(admin, bool):
        raise InputError(f"{w}.adminAccess: must be true or false, got {admin!r}", obj=obj)
    return Request(name, _str(ex.get("deviceClassName"), f"{w}.deviceClassName", obj),
                   _selectors(ex.get("selectors"), f"{w}.selectors", obj), mode, count, bool(admin))


def decode_claim_spec(spec: Any, what: str, obj: str) -> list[Request]:
    return decode_claim(spec, what, obj)[0]


def decode_claim(spec: Any, what: str, obj: str) -> tuple[list[Request], list[Constraint]]:
    """A ResourceClaimSpec's requests and constraints (validated as the API server does)."""
    spec = _map(spec, what, obj)
    devs = _map(spec.get("devices"), f"{what}.devices", obj)
    out: list[Request] = []
    names: set[str] = set()
    for j, r in enumerate(_list(devs.get("requests"), f"{what}.devices.requests", obj)):
        w = f"{what}.devices.requests[{j}]"
        r = _map(r, w, obj)
        rname = _str(r.get("name"), f"{w}.name", obj)
        if rname in names:
            raise InputError(f"{w}.name: duplicate request name {rname!r}", obj=obj)
        names.add(rname)
        ex = _map(r.get("exactly"), f"{w}.exactly", obj)
        first = _list(r.get("firstAvailable"), f"{w}.firstAvailable", obj)
        if bool(ex) == bool(first):
            raise InputError(f"{w}: exactly one of exactly or firstAvailable is required", obj=obj)
        if ex:
            out.append(_exact(ex, rname, f"{w}.exactly", obj, False))
            continue
        if len(first) > FIRST_AVAILABLE_MAX:
            raise InputError(f"{w}.firstAvailable: must have at most {FIRST_AVAILABLE_MAX} items, "
                             f"got {len(first)}", obj=obj)
        subs: list[Request] = []
        for k, sr in enumerate(first):
            sw = f"{w}.firstAvailable[{k}]"
            sr = _map(sr, sw, obj)
            sname = _str(sr.get("name"), f"{sw}.name", obj)
            if any(x.name == sname for x in subs):
                raise InputError(f"{sw}.name: duplicate subrequest name {sname!r}", obj=obj)
            subs.append(_exact(sr, sname, sw, obj, True))
            names.add(f"{rname}/{sname}")
        out.append(Request(rname, "", subrequests=tuple(subs)))
    cons: list[Constraint] = []
    for j, c in enumerate(_list(devs.get("constraints"), f"{what}.devices.constraints", obj)):
        w = f"{what}.devices.constraints[{j}]"
        c = _map(c, w, obj)
        if c.get("distinctAttribute") is not None:
            raise InputError(_gate_off(f"{w}.distinctAttribute", "DRAConsumableCapacity"), obj=obj)
        attr = c.get("matchAttribute")
        if attr is None:
            raise InputError(f"{w}.matchAttribute: required", obj=obj)
        attr = _str(attr, f"{w}.matchAttribute", obj)
        if "/" not in attr or not attr.split("/", 1)[0] or not attr.split("/", 1)[1]:
            raise InputError(f"{w}.matchAttribute: must be a fully qualified name <domain>/<name>, got {attr!r}",
                             obj=obj)
        reqs = tuple(_str(x, f"{w}.requests[]", obj) for x in _list(c.get("requests"), f"{w}.requests", obj))
        for x in reqs:
            if x not in names:
                raise InputError(f"{w}.requests: {x!r} is not a request (or <request>/<subrequest>) of the claim",
                                 obj=obj)
        cons.append(Constraint(reqs, attr))
    return out, cons


def decode_resource_claim(doc: dict[str, Any]) -> ResourceClaim:
    name, ns, obj = _obj("ResourceClaim", doc)
    reqs, cons = decode_claim(doc.get("spec"), "spec", obj)
    c = ResourceClaim(ns, name, reqs, constraints=cons, config=claim_config(doc.get("spec"), "spec", obj))
    meta = _map(doc.get("metadata"), "metadata", obj)
    c.uid = str(meta.get("uid") or "")
    c.deleting = meta.get("deletionTimestamp") is not None
    c.controller_uid = next((str(o.get("uid") or "") for o in _list(meta.get("ownerReferences"),
                                                                    "metadata.ownerReferences", obj)
                             if isinstance(o, dict) and o.get("controller") is True), "")
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
                                    _str(r.get("device"), f"{w}.device", obj),
                                    r.get("adminAccess") is True))
        c.allocation = res
        if alloc.get("nodeSelector") is not None:
            c.node_selector = _map(alloc.get("nodeSelector"), "status.allocation.nodeSelector", obj)
            try:
                c.available_on = parse_node_selector(c.node_selector, "status.allocation.nodeSelector")
            except InputError as e:
                raise InputError(e.problem, obj=obj) from None
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
    # imported here, not at start-up: hashlib loads OpenSSL (~3 ms), which few passes need
    import hashlib
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


def template_claim_name(pod_raw: dict[str, Any], namespace: str, pod_name: str, pod_claim: str) -> str:
    """The claim a template entry of spec.resourceClaims stands for, as `caldera schedule` and
    `caldera simulate` resolve it: the name pod.status.resourceClaimStatuses gives, else the one
    kube's resourceclaim controller would generate."""
    return template_claim_status_name(pod_raw, pod_claim) or generated_claim_name(namespace, pod_name, pod_claim)


def template_claim_status_name(pod_raw: dict[str, Any], pod_claim: str) -> str | None:
    for st in (pod_raw.get("status") or {}).get("resourceClaimStatuses") or []:
        if isinstance(st, dict) and st.get("name") == pod_claim:
            return st.get("resourceClaimName") or None
    return None
