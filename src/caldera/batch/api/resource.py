"""Volcano's resource arithmetic (pkg/scheduler/api/resource_info.go), in Python.

A Resource is milli-CPU, memory bytes and a map of scalar resources (extended resources and
ephemeral-storage in milli-units, `pods` as a plain count), all floats, as Volcano keeps them.
Comparisons carry Volcano's tolerance (0.1) and its rule for scalar dimensions one side lacks:
`ZERO` treats a missing dimension as 0, `INFINITY` as unbounded. Queue-level plugins (proportion,
capacity, drf, overcommit) use these objects; node-level fit checks use the same rules on numpy
columns (see nodes.py) so that the two can never disagree.
"""
from __future__ import annotations

from ...api.resourcenames import is_scalar

MIN_RESOURCE = 0.1
ZERO, INFINITY = 0, -1
IGNORED_SCALARS = frozenset({"pods"})
MAXF = 1.7976931348623157e308


def volcano_units(name: str, value: int) -> float:
    """A request/allocatable as the scheduler parsed it (cpu milli, memory bytes, others Value())
    in Volcano's units: milli for every scalar except `pods`."""
    if name in ("cpu", "memory", "pods"):
        return float(value)
    return float(value) * 1000.0


def is_scalar_name(name: str) -> bool:
    """The scalar dimensions NewResource keeps: pods, ephemeral-storage and kube's scalar
    resource names (IsScalarResourceName); quota names (count/*, limits.*) are dropped."""
    if name in ("pods", "ephemeral-storage"):
        return True
    return not name.startswith(("count/", "limits.")) and is_scalar(name)


def _le(l: float, r: float) -> bool:
    return l < r or abs(l - r) < MIN_RESOURCE


class Resource:
    __slots__ = ("cpu", "memory", "scalars")

    def __init__(self, cpu: float = 0.0, memory: float = 0.0, scalars: dict | None = None):
        self.cpu = float(cpu)
        self.memory = float(memory)
        self.scalars: dict[str, float] = dict(scalars) if scalars else {}

    # construction -------------------------------------------------------------------------
    @classmethod
    def from_requests(cls, req: dict[str, int]) -> Resource:
        """NewResource: cpu, memory, pods, ephemeral-storage and scalar resources; quota-style
        names (count/*, requests.*, limits.*) and other native names are dropped."""
        r = cls()
        for name, v in req.items():
            if name == "cpu":
                r.cpu += v
            elif name == "memory":
                r.memory += v
            elif not is_scalar_name(name):
                continue
            else:
                r.scalars[name] = r.scalars.get(name, 0.0) + volcano_units(name, v)
        return r

    @classmethod
    def infinite(cls) -> Resource:
        return cls(MAXF, MAXF)

    def clone(self) -> Resource:
        return Resource(self.cpu, self.memory, self.scalars)

    # queries ------------------------------------------------------------------------------
    def get(self, name: str) -> float:
        if name == "cpu":
            return self.cpu
        if name == "memory":
            return self.memory
        return self.scalars.get(name, 0.0)

    def names(self) -> list[str]:
        """Dimensions with a non-negligible amount (ResourceNames)."""
        out = []
        if self.cpu >= MIN_RESOURCE:
            out.append("cpu")
        if self.memory >= MIN_RESOURCE:
            out.append("memory")
        out.extend(n for n, v in self.scalars.items() if v >= MIN_RESOURCE)
        return out

    def is_empty(self) -> bool:
        if self.cpu >= MIN_RESOURCE or self.memory >= MIN_RESOURCE:
            return False
        return all(v < MIN_RESOURCE for n, v in self.scalars.items() if n not in IGNORED_SCALARS)

    # arithmetic (in place, returning self, as Volcano's) -----------------------------------
    def add(self, o: Resource) -> Resource:
        self.cpu += o.cpu
        self.memory += o.memory
        s = self.scalars
        for n, v in o.scalars.items():
            s[n] = s.get(n, 0.0) + v
        return self

    def sub(self, o: Resource) -> Resource:
        """Volcano's sub: scalars only where self has a scalar map at all."""
        self.cpu -= o.cpu
        self.memory -= o.memory
        if self.scalars or o.scalars:
            s = self.scalars
            for n, v in o.scalars.items():
                s[n] = s.get(n, 0.0) - v
        return self

    def multi(self, ratio: float) -> Resource:
        self.cpu *= ratio
        self.memory *= ratio
        for n in self.scalars:
            self.scalars[n] *= ratio
        return self

    def min_dimension(self, o: Resource, default: int) -> Resource:
        """MinDimensionResource: each dimension of self capped by o's."""
        self.cpu = min(self.cpu, o.cpu)
        self.memory = min(self.memory, o.memory)
        for n, v in self.scalars.items():
            if n in o.scalars:
                self.scalars[n] = min(v, o.scalars[n])
            elif default != INFINITY:
                self.scalars[n] = 0.0
        return self

    # comparisons -------------------------------------------------------------------------
    def less_equal(self, o: Resource, default: int = ZERO) -> bool:
        if not _le(self.cpu, o.cpu) or not _le(self.memory, o.memory):
            return False
        if default == INFINITY:
            for n in o.scalars:
                if n not in self.scalars:
                    return False
        for n, v in self.scalars.items():
            if n in o.scalars:
                if not _le(v, o.scalars[n]):
                    return False
            elif default != INFINITY and not _le(v, 0.0):
                return False
        return True

    def less_equal_names(self, o: Resource, default: int = ZERO) -> list[str]:
        """LessEqualWithResourcesName: the dimensions that do not fit (empty if all fit)."""
        bad = []
        if not _le(self.cpu, o.cpu):
            bad.append("cpu")
        if not _le(self.memory, o.memory):
            bad.append("memory")
        for n, v in self.scalars.items():
            if n not in o.scalars and default == INFINITY:
                continue
            if not _le(v, o.scalars.get(n, 0.0)):
                bad.append(n)
        return bad

    def less(self, o: Resource, default: int = ZERO) -> bool:
        if not (self.cpu < o.cpu and self.memory < o.memory):
            return False
        if default == INFINITY:
            for n in o.scalars:
                if n not in self.scalars:
                    return False
        for n, v in self.scalars.items():
            if n not in o.scalars:
                if default == INFINITY:
                    continue
                if not v < 0.0:
                    return False
            elif not v < o.scalars[n]:
                return False
        return True

    def less_equal_with_dimension(self, o: Resource | None, req: Resource | None) -> list[str]:
        """LessEqualWithDimensionAndResourcesName: compare only the dimensions `req` asks for
        (strictly, no tolerance); returns the dimensions where self exceeds o."""
        if o is None:
            return self.names() or ["cpu"]
        if req is None:
            return self.less_equal_names(o, ZERO)
        bad = []
        if req.cpu > 0 and self.cpu > o.cpu:
            bad.append("cpu")
        if req.memory > 0 and self.memory > o.memory:
            bad.append("memory")
        if not self.scalars:
            return bad
        for n, q in req.scalars.items():
            if n in IGNORED_SCALARS:
                continue
            if q > 0 and self.scalars.get(n, 0.0) > o.scalars.get(n, 0.0):
                bad.append(n)
        return bad

    def less_equal_partly_with_dimension(self, o: Resource, req: Resource | None) -> bool:
        if req is None:
            return False
        if req.cpu > 0 and _le(self.cpu, o.cpu):
            return True
        if req.memory > 0 and _le(self.memory, o.memory):
            return True
        for n, q in req.scalars.items():
            if n in IGNORED_SCALARS:
                continue
            if q > 0 and _le(self.get(n), o.get(n)):
                return True
        return False

    def diff(self, o: Resource, default: int = ZERO) -> tuple[Resource, Resource]:
        """(increased, decreased): per dimension, how much self exceeds o and falls short of it.
        A scalar one side lacks takes `default` (0, or -1 meaning infinite, passed through)."""
        inc, dec = Resource(), Resource()
        if self.cpu > o.cpu:
            inc.cpu = self.cpu - o.cpu
        else:
            dec.cpu = o.cpu - self.cpu
        if self.memory > o.memory:
            inc.memory = self.memory - o.memory
        else:
            dec.memory = o.memory - self.memory
        fill = float(default)
        for n in list(self.scalars) + [k for k in o.scalars if k not in self.scalars]:
            a = self.scalars.get(n, fill)
            b = o.scalars.get(n, fill)
            if a == -1.0:
                inc.scalars[n] = a
            elif b == -1.0:
                dec.scalars[n] = b
            elif a > b:
                inc.scalars[n] = a - b
            else:
                dec.scalars[n] = b - a
        return inc, dec

    def less_equal_partly_with_dimension_zero_filtered(self, o: Resource, req: Resource | None) -> bool:
        """LessEqualPartlyWithDimensionZeroFiltered: like less_equal_partly_with_dimension, but a
        requested dimension that both self and o lack (< MIN_RESOURCE) is not compared."""
        if req is None:
            return False
        f = Resource()
        if req.cpu > 0 and not (self.cpu < MIN_RESOURCE and o.cpu < MIN_RESOURCE):
            f.cpu = req.cpu
        if req.memory > 0 and not (self.memory < MIN_RESOURCE and o.memory < MIN_RESOURCE):
            f.memory = req.memory
        for n, q in req.scalars.items():
            if q > 0 and not (self.get(n) < MIN_RESOURCE and o.get(n) < MIN_RESOURCE):
                f.scalars[n] = q
        return self.less_equal_partly_with_dimension(o, f)

    def greater_partly_with_dimension(self, o: Resource | None, req: Resource | None) -> list[str]:
        """GreaterPartlyWithDimension: the dimensions `req` asks for (> 0) where self exceeds o
        (strictly); o None counts as empty."""
        if req is None:
            return []
        if o is None:
            o = Resource()
        bad = []
        if req.cpu > 0 and self.cpu > o.cpu:
            bad.append("cpu")
        if req.memory > 0 and self.memory > o.memory:
            bad.append("memory")
        for n, q in req.scalars.items():
            if n in IGNORED_SCALARS:
                continue
            if q > 0 and self.get(n) > o.get(n):
                bad.append(n)
        return bad

    def greater_partly_with_relevant_dimensions(self, o: Resource | None, req: Resource | None) -> list[str]:
        """GreaterPartlyWithRelevantDimensions: greater_partly_with_dimension restricted to the
        dimensions o actually has (cpu/memory >= MIN_RESOURCE, scalars present in o's map)."""
        if req is None:
            return []
        if o is None:
            o = Resource()
        f = Resource()
        if req.cpu > 0 and not o.cpu < MIN_RESOURCE:
            f.cpu = req.cpu
        if req.memory > 0 and not o.memory < MIN_RESOURCE:
            f.memory = req.memory
        for n, q in req.scalars.items():
            if q > 0 and n in o.scalars:
                f.scalars[n] = q
        return self.greater_partly_with_dimension(o, f)

    def less_partly(self, o: Resource, default: int = ZERO) -> bool:
        """LessPartly: some dimension of self is strictly below o's."""
        if self.cpu < o.cpu or self.memory < o.memory:
            return True
        if default == ZERO:
            for n in o.scalars:
                if n not in self.scalars:
                    return True
        for n, v in self.scalars.items():
            if n not in o.scalars and default == INFINITY:
                return True
            if v < o.scalars.get(n, 0.0):
                return True
        return False

    def __repr__(self) -> str:
        parts = [f"cpu {self.cpu:.2f}", f"memory {self.memory:.2f}"]
        parts += [f"{n} {v:.2f}" for n, v in sorted(self.scalars.items())]
        return "<" + ", ".join(parts) + ">"

    __str__ = __repr__


def exceeded_part(left: Resource | None, right: Resource | None) -> Resource:
    if right is None:
        return left if left is not None else Resource()
    if left is None:
        return Resource()
    return left.diff(right, ZERO)[0]


def intersection(r1: Resource, r2: Resource) -> list[str]:
    """Intersection: the dimensions both resources hold a non-negligible amount of."""
    names = set(r1.names())
    return [n for n in r2.names() if n in names]


def intersection_without_ignored(r1: Resource, r2: Resource) -> list[str]:
    """IntersectionWithIgnoredScalarResources: intersection without `pods`."""
    return [n for n in intersection(r1, r2) if n not in IGNORED_SCALARS]


def max_resource(l: Resource, r: Resource) -> Resource:
    """helpers.Max: per dimension the larger value (negative scalars are dropped)."""
    out = Resource(max(l.cpu, r.cpu), max(l.memory, r.memory))
    for n, v in l.scalars.items():
        if v >= 0:
            out.scalars[n] = v
    for n, v in r.scalars.items():
        if v >= 0:
            out.scalars[n] = max(v, out.scalars.get(n, 0.0))
    return out
