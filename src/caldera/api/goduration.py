"""Go's time.ParseDuration, step for step: the text of a Go duration ("1m30s", "500ms", "1.5h")
as Kubernetes and Volcano read it (metav1.Duration fields, Volcano plugin arguments and
annotations), with Go's overflow checks, float64 arithmetic for fractions and error messages."""
from __future__ import annotations

_UNITS = {"ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000,
          "s": 1_000_000_000, "m": 60 * 1_000_000_000, "h": 3600 * 1_000_000_000}


class DurationError(ValueError):
    """A text time.ParseDuration refuses; the message is Go's."""


def _digits(s: str) -> int:
    i = 0
    while i < len(s) and "0" <= s[i] <= "9":
        i += 1
    return i


def parse_go_duration(s: str) -> int:
    """time.ParseDuration, step for step (Go's overflow checks, its float64 arithmetic for
    fractions): a Go duration string -> nanoseconds; DurationError with Go's message."""
    orig = s
    invalid = DurationError(f'time: invalid duration "{orig}"')
    d = 0
    neg = False
    if s and s[0] in "+-":
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise invalid
    while s:
        if not (s[0] == "." or "0" <= s[0] <= "9"):
            raise invalid
        # leadingInt
        n = _digits(s)
        v = 0
        for c in s[:n]:
            if v > (1 << 63) // 10:
                raise invalid
            v = v * 10 + ord(c) - 48
            if v > 1 << 63:
                raise invalid
        s, pre = s[n:], n > 0
        # leadingFraction
        f, scale, post = 0, 1.0, False
        if s and s[0] == ".":
            s = s[1:]
            n = _digits(s)
            overflow = False
            for c in s[:n]:
                if overflow:
                    continue
                if f > ((1 << 63) - 1) // 10:
                    overflow = True
                    continue
                y = f * 10 + ord(c) - 48
                if y > 1 << 63:
                    overflow = True
                    continue
                f = y
                scale *= 10
            s, post = s[n:], n > 0
        if not pre and not post:
            raise invalid
        i = 0
        while i < len(s) and not (s[i] == "." or "0" <= s[i] <= "9"):
            i += 1
        if i == 0:
            raise DurationError(f'time: missing unit in duration "{orig}"')
        u, s = s[:i], s[i:]
        unit = _UNITS.get(u)
        if unit is None:
            raise DurationError(f'time: unknown unit "{u}" in duration "{orig}"')
        if v > (1 << 63) // unit:
            raise invalid
        v *= unit
        if f > 0:
            v += int(float(f) * (float(unit) / scale))
            if v > 1 << 63:
                raise invalid
        d += v
        if d > 1 << 63:
            raise invalid
    if neg:
        return -d
    if d > (1 << 63) - 1:
        raise invalid
    return d
