"""Fault settings (validated) and the per-request decision."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

from .kubestatus import SUPPORTED_CODES

MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
DROP_PHASES = ("before", "after")


@dataclass(frozen=True)
class FaultConfig:
    latency_spike_rate: float = 0.0
    latency_seconds: float = 1.0
    drop_rate: float = 0.0
    drop_phases: tuple = DROP_PHASES
    stream_drop_after_chunks: int = 1
    error_rates: tuple = ()            # ((code, rate), ...) sorted by code
    errors_on: str = "mutating"        # "mutating" | "all"
    path_pattern: str | None = None
    retry_after_seconds: int = 1
    seed: int = 0
    # periodic latency window: every `latency_window_period` s (0: off) a window of
    # `latency_window_seconds` opens, the first at `latency_window_start` (a time.monotonic()
    # instant: the host's clock, the same in every process; None: when the proxy started); every
    # request arriving inside a window waits `latency_window_delay` s more before it is forwarded
    latency_window_period: float = 0.0
    latency_window_seconds: float = 1.0
    latency_window_delay: float = 1.0
    latency_window_start: float | None = None

    def validate(self) -> FaultConfig:
        for name in ("latency_spike_rate", "drop_rate"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {v}")
        if self.latency_seconds < 0:
            raise ValueError(f"latency_seconds must be >= 0, got {self.latency_seconds}")
        if self.errors_on not in ("mutating", "all"):
            raise ValueError(f"errors_on must be 'mutating' or 'all', got {self.errors_on!r}")
        if not self.drop_phases or any(p not in DROP_PHASES for p in self.drop_phases):
            raise ValueError(f"drop_phases must be a non-empty subset of {DROP_PHASES}, got {self.drop_phases!r}")
        if self.latency_window_period < 0:
            raise ValueError(f"latency_window_period must be >= 0 (0: off), got {self.latency_window_period}")
        if self.latency_window_period and not 0 < self.latency_window_seconds <= self.latency_window_period:
            raise ValueError(f"latency_window_seconds must be in (0, latency_window_period], "
                             f"got {self.latency_window_seconds}")
        if self.latency_window_delay < 0:
            raise ValueError(f"latency_window_delay must be >= 0, got {self.latency_window_delay}")
        if self.stream_drop_after_chunks < 0:
            raise ValueError("stream_drop_after_chunks must be >= 0")
        total = 0.0
        for code, rate in self.error_rates:
            if code not in SUPPORTED_CODES:
                raise ValueError(f"error code {code} is not supported; use one of {sorted(SUPPORTED_CODES)}")
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"error rate for {code} must be in [0, 1], got {rate}")
            total += rate
        if total > 1.0 + 1e-9:
            raise ValueError(f"error rates sum to {total:g}; they must sum to at most 1")
        if self.path_pattern is not None:
            re.compile(self.path_pattern)
        return self


@dataclass
class Decision:
    latency: bool = False
    window: bool = False               # the request arrived inside a periodic latency window
    error: int | None = None
    drop: str | None = None            # "before" | "after" | "midstream"


def _config(base: FaultConfig | None, **kw) -> FaultConfig:
    if "error_rates" in kw:
        rates = kw["error_rates"] or {}
        kw["error_rates"] = tuple(sorted((int(c), float(r)) for c, r in dict(rates).items() if r))
    if "drop_phases" in kw:
        kw["drop_phases"] = tuple(kw["drop_phases"])
    return (replace(base, **kw) if base else FaultConfig(**kw)).validate()
