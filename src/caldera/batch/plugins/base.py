"""What a batch plugin is: built from its conf entry, registers callbacks when a session opens.

A plugin registers its callbacks in `on_session_open(ssn)` with `ssn.add(hook, self.name, fn)`;
the hooks and the type of each callback are in batch/framework/hooks.py (Session.add is
overloaded on the hook name, so a callback of the wrong shape is a type error).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import numpy.typing as npt

from ...errors import ConfigError

if TYPE_CHECKING:
    from ..api.info import TaskInfo
    from ..conf import PluginOption
    from ..framework.hooks import NodeRows, PredicateFn
    from ..framework.session import Session

# The votes of JobEnqueueable / JobPipelined
PERMIT, ABSTAIN, REJECT = 1, 0, -1


class BatchPlugin:
    """A Volcano plugin: `name` is its name in volcano-scheduler.conf, `args` its `arguments`.

    A plugin declares the `arguments` keys it reads (ARGUMENTS, or `arguments_read` when they
    depend on other arguments) and the keys Volcano's plugin reads that Caldera does not support
    (UNSUPPORTED, key -> why; UNSUPPORTED_PREFIXES); the conf loader warns about every other key
    (Volcano ignores them silently)."""

    name = ""
    ARGUMENTS: ClassVar[frozenset[str]] = frozenset()
    UNSUPPORTED: ClassVar[Mapping[str, str]] = {}
    UNSUPPORTED_PREFIXES: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def arguments_read(cls, arguments: Mapping[str, Any]) -> frozenset[str]:
        """The keys of `arguments` this plugin reads, given the other arguments."""
        return cls.ARGUMENTS

    @classmethod
    def unsupported(cls, key: str) -> str | None:
        """Why Caldera ignores a key Volcano's plugin reads ("" when there is nothing to add), or
        None when Volcano's plugin does not read it either."""
        if key in cls.UNSUPPORTED:
            return cls.UNSUPPORTED[key]
        for prefix, why in cls.UNSUPPORTED_PREFIXES.items():
            if key.startswith(prefix):
                return why
        return None

    @classmethod
    def unread_hint(cls, key: str, arguments: Mapping[str, Any]) -> str | None:
        """Why a key that looks like one this plugin reads is not read (None: no special reason)."""
        return None

    def __init__(self, arguments: dict[str, Any] | None = None, source: str = "volcano conf"):
        self.args = dict(arguments or {})
        self.source = source
        self.ssn: Session = cast("Session", None)   # the session, set before on_session_open
        self.option: PluginOption | None = None      # this plugin's conf entry (flags), set before on_session_open

    def on_session_open(self, ssn: Session) -> None:
        """Register this session's callbacks: ssn.add(hook, self.name, fn) (see hooks.py)."""

    def on_session_close(self, ssn: Session) -> None:
        """Write results back (PodGroup conditions, events) and drop per-session state."""

    # Volcano's Arguments.Get* with strict checking: a value that does not parse is a config
    # error (Volcano logs it and keeps the default; a silent default is worse for users).
    def _bad(self, key: str, want: str, v: object) -> ConfigError:
        return ConfigError(f"{self.source}: {self.name}.arguments.{key}: must be {want}, got {v!r}; "
                           f"fix the value or remove it to use the default")

    def arg_float(self, key: str, default: float) -> float:
        v = self.args.get(key)
        if v is None:
            return default
        if isinstance(v, bool):
            raise self._bad(key, "a number", v)
        try:
            return float(v)
        except (TypeError, ValueError):
            raise self._bad(key, "a number", v) from None

    def arg_int(self, key: str, default: int) -> int:
        v = self.args.get(key)
        if v is None:
            return default
        if isinstance(v, bool) or not (isinstance(v, int) or (isinstance(v, str) and v.strip().lstrip("-").isdigit())):
            raise self._bad(key, "an integer", v)
        return int(v)

    def arg_bool(self, key: str, default: bool) -> bool:
        v = self.args.get(key)
        if v is None:
            return default
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and v.lower() in ("true", "false"):
            return v.lower() == "true"
        raise self._bad(key, "true or false", v)



class ListedResources:
    """For plugins whose arguments list extra resources, `<RESOURCES>: "a, b"`, each with a
    weight `<RESOURCES>.<name>` (binpack, network-topology-aware): the per-resource keys the
    plugin reads and the hint for one the list leaves out."""
    RESOURCES: ClassVar[str] = ""
    ARGUMENTS: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def listed_resources(cls, arguments: Mapping[str, Any]) -> list[str]:
        """The names `<RESOURCES>` lists (as Volcano: a non-string value lists none)."""
        names = arguments.get(cls.RESOURCES)
        if not isinstance(names, str):
            return []
        return [n.strip() for n in names.split(",") if n.strip()]

    @classmethod
    def arguments_read(cls, arguments: Mapping[str, Any]) -> frozenset[str]:
        return cls.ARGUMENTS | {f"{cls.RESOURCES}.{n}" for n in cls.listed_resources(arguments)}

    @classmethod
    def unread_hint(cls, key: str, arguments: Mapping[str, Any]) -> str | None:
        prefix = cls.RESOURCES + "."
        if key.startswith(prefix):
            return f'{cls.RESOURCES} does not list "{key[len(prefix):]}"'
        return None

class Predicate:
    """A vectorised predicate: `mask(task, idx) -> bool array over idx` (None: all pass) and
    `reason(task, i) -> [(code, reason)]` for one node that failed (hooks.PredicateFn)."""
    __slots__ = ("mask", "reason")

    def __init__(self, mask: Callable[[TaskInfo, NodeRows], npt.NDArray[np.bool_] | None],
                 reason: Callable[[TaskInfo, int], list[tuple[str, str]]]):
        self.mask = mask
        self.reason = reason


if TYPE_CHECKING:
    def _conforms(p: Predicate) -> PredicateFn:
        return p
