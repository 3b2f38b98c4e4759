"""Status codes and Status, as in kube-scheduler's framework (fwk.Code / fwk.Status)."""
from __future__ import annotations

from enum import IntEnum


class Code(IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    def __str__(self) -> str:
        return _NAMES[self]


_NAMES = {Code.SUCCESS: "Success", Code.ERROR: "Error", Code.UNSCHEDULABLE: "Unschedulable",
          Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable", Code.WAIT: "Wait",
          Code.SKIP: "Skip", Code.PENDING: "Pending"}


class Status:
    """The result of running a plugin. `None` is treated as Success everywhere."""

    __slots__ = ("code", "plugin", "reasons", "timeout")

    def __init__(self, code: Code = Code.SUCCESS, *reasons: str, plugin: str = "", timeout: float = 0.0):
        self.code = code
        self.reasons = tuple(reasons)
        self.plugin = plugin
        self.timeout = timeout

    @classmethod
    def unschedulable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE, *reasons, plugin=plugin)

    @classmethod
    def unresolvable(cls, *reasons: str, plugin: str = "") -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons, plugin=plugin)

    @classmethod
    def error(cls, message: str, plugin: str = "") -> Status:
        return cls(Code.ERROR, message, plugin=plugin)

    @classmethod
    def skip(cls) -> Status:
        return _SKIP

    def message(self) -> str:
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def with_plugin(self, name: str) -> Status:
        if not self.plugin and self is not _SKIP:
            self.plugin = name
        return self

    def __repr__(self) -> str:
        return f"Status({self.code}, {self.message()!r}, plugin={self.plugin!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Status) and (self.code, self.reasons) == (other.code, other.reasons)

    # Status is mutable and unhashable: defining __eq__ without __hash__ sets __hash__ to None


class StatusList(list[Status]):
    """What a plugin's filter_statuses may return when it knows which nodes share a Status
    object: the per-node list, plus `groups`, each distinct object with its node count (the
    runtime then need not group every node again)."""

    groups: list[tuple[Status, int]]


_SKIP = Status(Code.SKIP)   # shared: Skip carries no reasons, so it is never annotated


