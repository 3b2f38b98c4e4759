"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's leaderelection semantics.

The election record lives in the Lease spec (holderIdentity, leaseDurationSeconds, acquireTime,
renewTime, leaseTransitions). A candidate never trusts the timestamps written in the record (they
come from another machine's clock): it remembers, by its own monotonic clock, when it last saw the
record *change* (observed time), and treats the lease as expired only once leaseDurationSeconds
have passed since then without a change. Writes use the Lease's resourceVersion (optimistic
concurrency): a 409 means someone else wrote first, and the attempt is retried next period.

The leader renews every retry period. If no renew has succeeded for renew-deadline seconds
(measured from the *start* of the last successful request, so the API server cannot have stamped
it earlier), it stops leading: `is_leader()` turns False by the clock alone even while a request
hangs, every request carries a timeout that ends at the deadline, and a watchdog thread calls
on_stopped_leading at the deadline even if a request overruns its timeout. As renew-deadline <
lease-duration, the old leader has stopped before any candidate can see the lease as expired.
Seeing another holder in the record ends leadership at once. On stop() the leader stops acting
first, then releases the lease (holderIdentity "", leaseDurationSeconds 1, as client-go's
ReleaseOnCancel), so a successor need not wait.

After losing, the elector campaigns again (reacquire=True) or finishes (reacquire=False; kube-
scheduler exits instead). on_started_leading runs in a thread of its own (client-go: a goroutine),
on_stopped_leading / on_new_leader in the election threads; `is_leader()` is what to act on.
`step()` does one round and returns the seconds until the next; `start()` loops it in a thread.
Tests drive `step()` with a fake clock.
"""
from __future__ import annotations

import logging
import math
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ..errors import ConfigError

log = logging.getLogger("caldera.leader")

JITTER_FACTOR = 1.2          # client-go's wait.JitterUntil factor for the acquire loop
LEASES = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"


def default_identity() -> str:
    """hostname_uuid, as kube-scheduler builds its leader-election identity."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass
class LeaderElectionConfig:
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    namespace: str = "kube-system"
    name: str = "kube-scheduler"
    identity: str = field(default_factory=default_identity)
    release_on_cancel: bool = True

    def validate(self) -> LeaderElectionConfig:
        """client-go's NewLeaderElector checks, as one-line errors naming the flag."""
        for flag, v in (("--leader-elect-lease-duration", self.lease_duration),
                        ("--leader-elect-renew-deadline", self.renew_deadline),
                        ("--leader-elect-retry-period", self.retry_period)):
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v <= 0:
                raise ConfigError(f"{flag}: must be greater than zero (got {v!r})")
        if self.lease_duration < 1:
            raise ConfigError(f"--leader-elect-lease-duration: must be at least 1s, the Lease stores "
                              f"whole seconds (got {_fmt(self.lease_duration)})")
        # the Lease records whole seconds: others judge expiry by the truncated value
        stored = int(self.lease_duration)
        if self.renew_deadline >= stored:
            extra = f" (stored in the Lease as {stored}s)" if stored != self.lease_duration else ""
            raise ConfigError(f"--leader-elect-renew-deadline: must be less than --leader-elect-lease-duration "
                              f"(got {_fmt(self.renew_deadline)} >= {_fmt(self.lease_duration)}{extra})")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ConfigError(f"--leader-elect-retry-period: must be less than --leader-elect-renew-deadline / "
                              f"{JITTER_FACTOR} (got {_fmt(self.retry_period)} with renew deadline "
                              f"{_fmt(self.renew_deadline)})")
        if not self.identity:
            raise ConfigError("leader election identity: must not be empty")
        if not self.name or not self.namespace:
            raise ConfigError("--leader-elect-resource-name/--leader-elect-resource-namespace: must not be empty")
        return self


def _fmt(v) -> str:
    return f"{v:g}s" if isinstance(v, (int, float)) else repr(v)


class Clock:
    """Real clocks: monotonic for local judgments, UTC wall time for the record's timestamps."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> datetime:
        return datetime.now(UTC)


def micro_time(t: datetime) -> str:
    """metav1.MicroTime in RFC 3339 with microseconds."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


RECORD_FIELDS = ("holderIdentity", "leaseDurationSeconds", "acquireTime", "renewTime", "leaseTransitions")


def record_of(lease: dict) -> dict:
    """The LeaderElectionRecord of a Lease (absent fields read as zero values)."""
    spec = lease.get("spec") or {}
    return {"holderIdentity": spec.get("holderIdentity") or "",
            "leaseDurationSeconds": int(spec.get("leaseDurationSeconds") or 0),
            "acquireTime": spec.get("acquireTime"),
            "renewTime": spec.get("renewTime"),
            "leaseTransitions": int(spec.get("leaseTransitions") or 0)}


class LeaderElector:
    def __init__(self, api, config: LeaderElectionConfig, *,
                 on_started_leading: Callable[[], None] | None = None,
                 on_stopped_leading: Callable[[], None] | None = None,
                 on_new_leader: Callable[[str], None] | None = None,
                 clock: Clock | None = None, rng: random.Random | None = None,
                 reacquire: bool = True):
        self.api = api
        self.config = config.validate()
        self.identity = config.identity
        self.on_started_leading = on_started_leading or (lambda: None)
        self.on_stopped_leading = on_stopped_leading or (lambda: None)
        self.on_new_leader = on_new_leader
        self.clock = clock or Clock()
        self.rng = rng or random.Random()
        self.reacquire = reacquire
        self.path = LEASES.format(ns=config.namespace) + "/" + config.name
        self.lock = threading.Lock()
        self.lease: dict | None = None           # last Lease object read or written (carries the RV)
        self.observed: dict = record_of({})      # last observed record
        self.observed_time = -math.inf           # monotonic time it was observed (changed)
        self.reported_leader = ""
        self.leading = False
        self.last_renew = -math.inf              # start of the last successful acquire/renew request
        self.transitions = 0                     # times this elector became leader
        self.finished = False
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None

    # ---- public state ------------------------------------------------------------------
    def is_leader(self) -> bool:
        """True only while leading and within renew-deadline of the last successful renew."""
        if self.stop_event.is_set():
            return False
        with self.lock:
            return self.leading and self.clock.monotonic() < self.last_renew + self.config.renew_deadline

    def leader(self) -> str:
        """The holder of the last observed record ("" if none)."""
        with self.lock:
            return self.observed["holderIdentity"]

    def describe(self) -> str:
        return f"{self.config.namespace}/{self.config.name}"

    # ---- one round ---------------------------------------------------------------------
    def step(self) -> float:
        """One acquire or renew round; returns the seconds to wait before the next."""
        if self.finished:
            return math.inf
        if not self.leading:
            start = self.clock.monotonic()
            ok = self._try_acquire_or_renew(timeout=self.config.renew_deadline)
            self._report_transition()
            if ok:
                self._start_leading(start)
                return self.config.retry_period
            return self.config.retry_period * (1 + self.rng.random() * JITTER_FACTOR)
        now = self.clock.monotonic()
        deadline = self.last_renew + self.config.renew_deadline
        if now >= deadline:
            self._stop_leading(f"failed to renew lease {self.describe()}: renew deadline "
                               f"({_fmt(self.config.renew_deadline)}) exceeded")
            return self._after_loss()
        ok = self._try_acquire_or_renew(timeout=deadline - now)
        self._report_transition()
        if ok:
            with self.lock:
                self.last_renew = now
            if not self.leading:   # the watchdog gave up while the request was in flight
                return self._after_loss()
            return self.config.retry_period
        if self.observed["holderIdentity"] != self.identity:
            self._stop_leading(f"lease {self.describe()} is now held by {self.observed['holderIdentity']!r}")
            return self._after_loss()
        now = self.clock.monotonic()
        if now >= deadline:
            self._stop_leading(f"failed to renew lease {self.describe()}: renew deadline "
                               f"({_fmt(self.config.renew_deadline)}) exceeded")
            return self._after_loss()
        return min(self.config.retry_period, deadline - now)

    def check_deadline(self) -> bool:
        """Give up leadership if renew-deadline has passed since the last successful renew (the
        watchdog calls this, so a request hanging past its timeout cannot delay it). True if
        it gave up now."""
        with self.lock:
            lost = self.leading and self.clock.monotonic() >= self.last_renew + self.config.renew_deadline
        if lost:
            self._stop_leading(f"failed to renew lease {self.describe()}: renew deadline "
                               f"({_fmt(self.config.renew_deadline)}) exceeded")
        return lost

    def _watchdog(self) -> None:
        tick = self.config.retry_period / 4
        while not self.stop_event.is_set():
            with self.lock:
                left = self.last_renew + self.config.renew_deadline - self.clock.monotonic() if self.leading else tick
            self.stop_event.wait(min(tick, max(left, 0.0)) + 0.001)
            self.check_deadline()

    def _after_loss(self) -> float:
        if self.finished:
            return math.inf
        return self.config.retry_period * (1 + self.rng.random() * JITTER_FACTOR)

    def _start_leading(self, start: float) -> None:
        with self.lock:
            self.leading = True
            self.last_renew = start
            self.transitions += 1
        log.info("successfully acquired lease %s as %s", self.describe(), self.identity)
        threading.Thread(target=self._call, args=(self.on_started_leading,), daemon=True,
                         name="caldera-leading").start()

    def _stop_leading(self, why: str) -> None:
        with self.lock:
            was = self.leading
            self.leading = False
            if was and not self.reacquire:
                self.finished = True
        if was:
            log.warning("stopped leading: %s", why)
            self._call(self.on_stopped_leading)

    @staticmethod
    def _call(fn, *args) -> None:
        try:
            fn(*args)
        except Exception:  # a callback failing must not kill the election thread
            log.exception("leader election callback failed")

    def _report_transition(self) -> None:
        holder = self.observed["holderIdentity"]
        if holder == self.reported_leader:
            return
        self.reported_leader = holder
        if self.on_new_leader is not None:
            self._call(self.on_new_leader, holder)

    # ---- the record --------------------------------------------------------------------
    def _holds_record(self) -> bool:
        return self.observed["holderIdentity"] == self.identity

    def _lease_valid(self, now: float) -> bool:
        return self.observed_time + self.observed["leaseDurationSeconds"] > now

    def _observe(self, record: dict, lease: dict | None) -> None:
        with self.lock:
            self.observed = record
            self.observed_time = self.clock.monotonic()
            if lease is not None:
                self.lease = lease

    def _request(self, method: str, body, timeout: float):
        path = self.path if method != "POST" else LEASES.format(ns=self.config.namespace)
        return self.api.request(method, path, body, timeout=max(timeout, 0.001))

    def _try_acquire_or_renew(self, timeout: float) -> bool:
        """client-go's tryAcquireOrRenew: optimistic renew, else GET, create or take over."""
        t_end = self.clock.monotonic() + timeout
        left = lambda: t_end - self.clock.monotonic()  # noqa: E731
        now_wall = micro_time(self.clock.wall())
        rec = {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.config.lease_duration),
               "acquireTime": now_wall, "renewTime": now_wall, "leaseTransitions": 0}
        # 1. fast path: we hold it and it is valid -> update the Lease we last saw
        if self._holds_record() and self._lease_valid(self.clock.monotonic()) and self.lease is not None:
            rec["acquireTime"] = self.observed["acquireTime"]
            rec["leaseTransitions"] = self.observed["leaseTransitions"]
            try:
                _, got = self._request("PUT", self._with_spec(self.lease, rec), left())
                self._observe(rec, got)
                return True
            except Exception as e:
                log.info("optimistic renew of %s failed (%s); falling back to a read", self.describe(), _err(e))
            if left() <= 0:
                return False
        # 2. read the record, create it if absent
        try:
            _, lease = self._request("GET", None, left())
        except Exception as e:
            if getattr(e, "status", None) != 404:
                log.warning("error retrieving lease %s: %s", self.describe(), _err(e))
                return False
            if left() <= 0:
                return False
            try:
                _, got = self._request("POST", self._with_spec(
                    {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                     "metadata": {"name": self.config.name, "namespace": self.config.namespace}}, rec), left())
            except Exception as e2:
                log.warning("error creating lease %s: %s", self.describe(), _err(e2))
                return False
            self._observe(rec, got)
            return True
        old = record_of(lease)
        # 3. note a change of the record (by value) and when we saw it
        if old != self.observed:
            self._observe(old, lease)
        else:
            with self.lock:
                self.lease = lease
        if old["holderIdentity"] and self._lease_valid(self.clock.monotonic()) and not self._holds_record():
            log.debug("lease %s is held by %s and has not yet expired", self.describe(), old["holderIdentity"])
            return False
        # 4. renew (keep acquireTime and transitions) or take over (one more transition)
        if self._holds_record():
            rec["acquireTime"] = old["acquireTime"]
            rec["leaseTransitions"] = old["leaseTransitions"]
        else:
            rec["leaseTransitions"] = old["leaseTransitions"] + 1
        if left() <= 0:
            return False
        try:
            _, got = self._request("PUT", self._with_spec(lease, rec), left())
        except Exception as e:  # 409: someone wrote first; retried next period
            log.info("failed to update lease %s: %s", self.describe(), _err(e))
            return False
        self._observe(rec, got)
        return True

    @staticmethod
    def _with_spec(lease: dict, rec: dict) -> dict:
        body = dict(lease)
        body["metadata"] = dict(lease.get("metadata") or {})
        body["spec"] = {k: rec[k] for k in RECORD_FIELDS}
        return body

    def release(self) -> bool:
        """Give the lease up if the record says we hold it (holderIdentity "", 1s duration)."""
        if not self._holds_record() or self.lease is None:
            return True
        now_wall = micro_time(self.clock.wall())
        rec = {"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": now_wall,
               "renewTime": now_wall, "leaseTransitions": self.observed["leaseTransitions"]}
        try:
            _, got = self._request("PUT", self._with_spec(self.lease, rec), self.config.retry_period)
        except Exception as e:
            log.warning("failed to release lease %s: %s", self.describe(), _err(e))
            return False
        self._observe(rec, got)
        log.info("released lease %s", self.describe())
        return True

    # ---- thread ------------------------------------------------------------------------
    def run(self) -> None:
        log.info("attempting to acquire leader lease %s as %s", self.describe(), self.identity)
        while not self.stop_event.is_set():
            try:
                delay = self.step()
            except Exception:
                log.exception("leader election round failed")
                delay = self.config.retry_period
            if math.isinf(delay):
                break
            if self.leading:  # wake in time to give up by the deadline
                delay = min(delay, max(0.0, self.last_renew + self.config.renew_deadline - self.clock.monotonic()))
            self.stop_event.wait(delay)
        self._shutdown()

    def _shutdown(self) -> None:
        self._stop_leading("shutting down")
        if self.config.release_on_cancel:
            self.release()

    def start(self) -> LeaderElector:
        self.thread = threading.Thread(target=self.run, daemon=True, name="caldera-leader-election")
        self.thread.start()
        threading.Thread(target=self._watchdog, daemon=True, name="caldera-leader-watchdog").start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop acting as leader at once (is_leader() is False from here on), then let the
        thread call on_stopped_leading, release the lease (ReleaseOnCancel) and end."""
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(timeout)
        else:
            self._shutdown()


def _err(e: Exception) -> str:
    return str(e) or type(e).__name__


__all__ = [
    "JITTER_FACTOR",
    "Clock",
    "LeaderElectionConfig",
    "LeaderElector",
    "default_identity",
    "micro_time",
    "record_of",
]
