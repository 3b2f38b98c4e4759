"""What a batch plugin is: built from its conf entry, registers callbacks when a session opens."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...errors import ConfigError

# The votes of JobEnqueueable / JobPipelined
PERMIT, ABSTAIN, REJECT = 1, 0, -1


class BatchPlugin:
    name = ""

    def __init__(self, arguments: dict | None = None, source: str = "volcano conf"):
        self.args = dict(arguments or {})
        self.source = source
        self.ssn = None       # the session, set before on_session_open
        self.option = None    # this plugin's conf entry (flags), set before on_session_open

    def on_session_open(self, ssn) -> None:
        pass

    def on_session_close(self, ssn) -> None:
        pass

    # Volcano's Arguments.Get* with strict checking: a value that does not parse is a config
    # error (Volcano logs it and keeps the default; a silent default is worse for users).
    def _bad(self, key, want, v):
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


class Predicate:
    """A vectorised predicate: `mask(task, idx) -> bool array over idx` (None: all pass) and
    `reason(task, i) -> [(code, reason)]` for one node that failed."""
    __slots__ = ("mask", "reason")

    def __init__(self, mask: Callable[..., np.ndarray | None], reason: Callable[..., list]):
        self.mask = mask
        self.reason = reason
