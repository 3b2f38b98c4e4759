"""Leader election against an in-memory Lease API and a fake clock (client-go semantics)."""
from __future__ import annotations

import copy
import random
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from caldera.errors import ConfigError
from caldera.live.client import ApiError
from caldera.live.leader import LeaderElectionConfig, LeaderElector, default_identity, micro_time

NS, NAME = "kube-system", "caldera"
PATH = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{NAME}"
COLLECTION = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"
EPOCH = datetime(2030, 1, 1, tzinfo=UTC)


class FakeClock:
    def __init__(self, t: float = 1000.0):
        self.t = t

    def monotonic(self) -> float:
        return self.t

    def wall(self) -> datetime:
        return EPOCH + timedelta(seconds=self.t)

    def advance(self, dt: float) -> None:
        self.t += dt


class FakeApi:
    """GET/POST/PUT of Leases with resourceVersion conflict checks, like the API server."""

    def __init__(self, clock: FakeClock):
        self.clock = clock
        self.store: dict[tuple[str, str], dict] = {}
        self.rv = 100
        self.calls: list[tuple[str, str, float | None]] = []
        self.hook = None          # hook(method, path, body, timeout) before the request is served

    def _next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def put_lease(self, spec: dict, name: str = NAME) -> dict:
        """Write a Lease directly (someone else's update)."""
        obj = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": name, "namespace": NS, "resourceVersion": self._next_rv()},
               "spec": copy.deepcopy(spec)}
        self.store[(NS, name)] = obj
        return obj

    def spec(self, name: str = NAME) -> dict:
        return self.store[(NS, name)]["spec"]

    def request(self, method, path, body=None, query=None, timeout=None):
        self.calls.append((method, path, timeout))
        if self.hook is not None:
            self.hook(method, path, body, timeout)
        prefix = COLLECTION
        if method == "POST":
            assert path == prefix
            key = (body["metadata"]["namespace"], body["metadata"]["name"])
            if key in self.store:
                raise ApiError(409, "AlreadyExists", f'leases.coordination.k8s.io "{key[1]}" already exists')
            obj = copy.deepcopy(body)
            obj["metadata"]["resourceVersion"] = self._next_rv()
            self.store[key] = obj
            return 201, copy.deepcopy(obj)
        assert path.startswith(prefix + "/")
        key = (NS, path[len(prefix) + 1:])
        cur = self.store.get(key)
        if cur is None:
            raise ApiError(404, "NotFound", f'leases.coordination.k8s.io "{key[1]}" not found')
        if method == "GET":
            return 200, copy.deepcopy(cur)
        if method == "PUT":
            if body["metadata"].get("resourceVersion") != cur["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", "the object has been modified; please apply your changes "
                                                "to the latest version and try again")
            obj = copy.deepcopy(body)
            obj["metadata"]["resourceVersion"] = self._next_rv()
            self.store[key] = obj
            return 200, copy.deepcopy(obj)
        raise AssertionError(method)


class Partitionable:
    """An Api view that can be cut off from the server (transport failure, after `latency`)."""

    def __init__(self, api: FakeApi, clock: FakeClock):
        self.api, self.clock, self.down, self.latency = api, clock, False, 0.0

    def request(self, method, path, body=None, query=None, timeout=None):
        if self.down:
            self.clock.advance(min(self.latency, timeout or self.latency))
            raise ConnectionError("connection refused")
        return self.api.request(method, path, body, query, timeout=timeout)


class Recorder:
    def __init__(self, clock):
        self.clock = clock
        self.events: list[tuple[str, float]] = []
        self.started = threading.Event()

    def kw(self):
        return dict(on_started_leading=self._started, on_stopped_leading=self._stopped,
                    on_new_leader=lambda who: self.events.append((f"new:{who}", self.clock.t)))

    def _started(self):
        self.events.append(("started", self.clock.t))
        self.started.set()

    def _stopped(self):
        self.events.append(("stopped", self.clock.t))

    def times(self, what):
        return [t for e, t in self.events if e == what]


def elector(api, clock, ident, rec=None, **cfg):
    c = LeaderElectionConfig(namespace=NS, name=NAME, identity=ident, **cfg)
    return LeaderElector(api, c, clock=clock, rng=random.Random(1), **(rec.kw() if rec else {}))


# ------------------------------------------------------------------------------ validation

@pytest.mark.parametrize("ld,rd,rp,error", [
    (15, 10, 2, None),
    (60, 30, 5, None),
    (1, 0.5, 0.2, None),
    (15, 15, 2, "--leader-elect-renew-deadline: must be less than --leader-elect-lease-duration"),
    (10, 15, 2, "--leader-elect-renew-deadline: must be less than --leader-elect-lease-duration"),
    (10.9, 10.5, 2, "--leader-elect-renew-deadline: must be less than --leader-elect-lease-duration"),
    (15, 10, 10, "--leader-elect-retry-period: must be less than --leader-elect-renew-deadline"),
    (15, 10, 9, "--leader-elect-retry-period: must be less than --leader-elect-renew-deadline"),
    (15, 2.4, 2, "--leader-elect-retry-period: must be less than --leader-elect-renew-deadline"),
    (0, 10, 2, "--leader-elect-lease-duration: must be greater than zero"),
    (-5, 10, 2, "--leader-elect-lease-duration: must be greater than zero"),
    (15, 0, 2, "--leader-elect-renew-deadline: must be greater than zero"),
    (15, 10, 0, "--leader-elect-retry-period: must be greater than zero"),
    (15, 10, float("nan"), "--leader-elect-retry-period: must be greater than zero"),
    (0.5, 0.3, 0.1, "--leader-elect-lease-duration: must be at least 1s"),
])
def test_config_validation(ld, rd, rp, error):
    cfg = LeaderElectionConfig(lease_duration=ld, renew_deadline=rd, retry_period=rp)
    if error is None:
        assert cfg.validate() is cfg
        return
    with pytest.raises(ConfigError) as e:
        cfg.validate()
    msg = str(e.value)
    assert msg.startswith(error), msg
    assert "\n" not in msg


def test_elector_refuses_an_invalid_config():
    clock = FakeClock()
    with pytest.raises(ConfigError, match="--leader-elect-renew-deadline"):
        elector(FakeApi(clock), clock, "a", lease_duration=5, renew_deadline=5)


def test_default_identity_is_hostname_underscore_uuid():
    import socket
    ident = default_identity()
    host, _, uid = ident.rpartition("_")
    assert host == socket.gethostname() and len(uid) == 36 and uid.count("-") == 4
    assert default_identity() != ident
    assert LeaderElectionConfig().identity != LeaderElectionConfig().identity


# ------------------------------------------------------------------------------ acquire / renew

def test_creates_the_lease_when_absent_and_leads():
    clock = FakeClock()
    api = FakeApi(clock)
    rec = Recorder(clock)
    a = elector(api, clock, "a", rec)
    assert not a.is_leader()
    delay = a.step()
    assert a.is_leader() and delay == 2.0
    assert api.calls[0][0] == "GET" and api.calls[1][:2] == ("POST", COLLECTION)
    spec = api.spec()
    assert spec == {"holderIdentity": "a", "leaseDurationSeconds": 15, "acquireTime": micro_time(clock.wall()),
                    "renewTime": micro_time(clock.wall()), "leaseTransitions": 0}
    assert spec["renewTime"].endswith("Z") and len(spec["renewTime"].split(".")[1]) == 7  # 6 digits + Z
    assert rec.started.wait(2)
    assert ("new:a", clock.t) in rec.events


def test_renew_keeps_acquire_time_and_transitions_and_moves_renew_time():
    clock = FakeClock()
    api = FakeApi(clock)
    a = elector(api, clock, "a")
    a.step()
    first = dict(api.spec())
    rv = api.store[(NS, NAME)]["metadata"]["resourceVersion"]
    for _ in range(5):
        clock.advance(a.step())
    spec = api.spec()
    assert spec["acquireTime"] == first["acquireTime"]
    assert spec["leaseTransitions"] == 0
    assert spec["renewTime"] != first["renewTime"]
    assert api.store[(NS, NAME)]["metadata"]["resourceVersion"] != rv
    # renews take the optimistic path: a PUT with the last seen resourceVersion, no GET
    assert [m for m, _, _ in api.calls[2:]] == ["PUT"] * 5
    assert a.is_leader()


def test_candidate_judges_expiry_by_its_own_clock_not_renew_time():
    clock = FakeClock()
    api = FakeApi(clock)
    # the holder's clock is an hour behind: renewTime looks long expired, but it is not our clock
    stale = micro_time(clock.wall() - timedelta(hours=1))
    api.put_lease({"holderIdentity": "other", "leaseDurationSeconds": 15, "acquireTime": stale,
                   "renewTime": stale, "leaseTransitions": 3})
    b = elector(api, clock, "b")
    assert b.step() >= 2.0 and not b.is_leader()
    clock.advance(14.9)
    b.step()
    assert not b.is_leader() and api.spec()["holderIdentity"] == "other"
    clock.advance(0.2)        # 15.1s since b first saw this record unchanged
    b.step()
    assert b.is_leader()
    spec = api.spec()
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 4
    assert spec["acquireTime"] == micro_time(clock.wall())


def test_a_changed_record_restarts_the_candidates_wait_even_with_a_future_renew_time():
    clock = FakeClock()
    api = FakeApi(clock)
    future = micro_time(clock.wall() + timedelta(hours=1))
    api.put_lease({"holderIdentity": "other", "leaseDurationSeconds": 15, "acquireTime": future,
                   "renewTime": future, "leaseTransitions": 0})
    b = elector(api, clock, "b")
    b.step()
    clock.advance(10)
    # the holder renews: only the change matters, not the timestamp it wrote
    api.put_lease({**api.spec(), "renewTime": micro_time(clock.wall() - timedelta(days=1))})
    b.step()
    clock.advance(14)         # 24s after the first sight, 14s after the change
    b.step()
    assert not b.is_leader()
    clock.advance(1.5)
    b.step()
    assert b.is_leader() and api.spec()["leaseTransitions"] == 1


def test_honours_the_lease_duration_written_in_the_record():
    clock = FakeClock()
    api = FakeApi(clock)
    api.put_lease({"holderIdentity": "other", "leaseDurationSeconds": 60, "acquireTime": None,
                   "renewTime": None, "leaseTransitions": 0})
    b = elector(api, clock, "b")
    b.step()
    clock.advance(30)
    b.step()
    assert not b.is_leader()
    clock.advance(30.5)
    b.step()
    assert b.is_leader() and api.spec()["leaseDurationSeconds"] == 15


def test_conflicting_takeover_one_wins_the_other_gets_409_and_retries_later():
    clock = FakeClock()
    api = FakeApi(clock)
    api.put_lease({"holderIdentity": "old", "leaseDurationSeconds": 15, "acquireTime": None,
                   "renewTime": None, "leaseTransitions": 7})
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    a.step(), b.step()
    clock.advance(16)

    def race(method, path, body, timeout):
        if method == "PUT" and body["spec"]["holderIdentity"] == "b":
            api.hook = None
            a.step()              # a writes between b's GET and b's PUT

    api.hook = race
    b.step()
    assert a.is_leader() and not b.is_leader()
    assert api.spec()["holderIdentity"] == "a" and api.spec()["leaseTransitions"] == 8
    assert any(m == "PUT" for m, _, _ in api.calls[-3:])
    # b now sees a's record as new and waits a full lease duration from now
    clock.advance(2)
    b.step()
    assert not b.is_leader() and b.leader() == "a"


def test_create_race_already_exists_is_not_leadership():
    clock = FakeClock()
    api = FakeApi(clock)
    a, b = elector(api, clock, "a"), elector(api, clock, "b")

    def race(method, path, body, timeout):
        if method == "POST" and body["spec"]["holderIdentity"] == "b":
            api.hook = None
            a.step()

    api.hook = race
    b.step()
    assert a.is_leader() and not b.is_leader() and api.spec()["holderIdentity"] == "a"


# ------------------------------------------------------------------------------ losing the lease

def test_leader_that_cannot_renew_stops_within_renew_deadline_before_the_lease_could_expire():
    clock = FakeClock()
    api = FakeApi(clock)
    net = Partitionable(api, clock)
    rec = Recorder(clock)
    a = elector(net, clock, "a", rec)
    a.step()
    for _ in range(3):
        clock.advance(a.step())
    last_renew_start = a.last_renew
    assert a.is_leader()
    net.down, net.latency = True, 3.0      # every request hangs 3s (or its timeout) then fails
    timeouts = []
    orig = net.request

    def watch(method, path, body=None, query=None, timeout=None):
        timeouts.append((clock.t, timeout))
        # the leader never believes itself leader past its renew deadline
        assert not a.is_leader() or clock.t < last_renew_start + 10
        return orig(method, path, body, query, timeout=timeout)

    net.request = watch
    for _ in range(20):
        d = a.step()
        if rec.times("stopped"):
            break
        clock.advance(d)
    stopped = rec.times("stopped")
    assert len(stopped) == 1
    assert stopped[0] - last_renew_start <= 10.0 + 1e-9 < 15.0
    assert not a.is_leader()
    # no request outlives the deadline
    for t, timeout in timeouts:
        if t < last_renew_start + 10:
            assert t + timeout <= last_renew_start + 10 + 1e-9


def test_renew_deadline_counts_from_the_start_of_the_last_successful_request():
    """The server may commit a renew as soon as it is sent; a slow answer must not extend
    leadership (others count their lease-duration from when they see that commit)."""
    clock = FakeClock()
    api = FakeApi(clock)
    rec = Recorder(clock)
    commits = []
    orig = api.request

    def slow(method, path, body=None, query=None, timeout=None):
        out = orig(method, path, body, query, timeout=timeout)
        if method in ("PUT", "POST"):
            commits.append(clock.t)
            clock.advance(min(1.5, timeout))      # the answer takes 1.5s to come back
        return out

    api.request = slow
    a = elector(api, clock, "a", rec)
    a.step()
    for _ in range(3):
        clock.advance(a.step())

    def down(method, path, body=None, query=None, timeout=None):
        clock.advance(min(0.5, timeout))
        raise ConnectionError("refused")

    api.request = down
    for _ in range(30):
        d = a.step()
        if rec.times("stopped"):
            break
        clock.advance(d)
    assert rec.times("stopped")[0] <= commits[-1] + 10.0 + 1e-9


def test_is_leader_turns_false_by_the_clock_while_a_request_hangs_and_the_watchdog_fires():
    clock = FakeClock()
    api = FakeApi(clock)
    rec = Recorder(clock)
    a = elector(api, clock, "a", rec)
    a.step()
    start = a.last_renew
    seen = []

    def hang(method, path, body, timeout):
        # a request that overruns its timeout (transport retries): the clock moves on meanwhile
        for _ in range(130):
            clock.advance(0.1)
            seen.append((clock.t, a.is_leader()))
            a.check_deadline()      # what the watchdog thread does every retry_period/4
        raise ConnectionError("timed out")

    api.hook = hang
    clock.advance(2)
    a.step()
    assert all(not leader for t, leader in seen if t >= start + 10)
    assert all(leader for t, leader in seen if t < start + 10 - 1e-9)
    assert rec.times("stopped") and start + 10 <= rec.times("stopped")[0] < start + 10.2 < start + 15


def test_another_holder_in_the_record_ends_leadership_at_once():
    clock = FakeClock()
    api = FakeApi(clock)
    rec = Recorder(clock)
    a = elector(api, clock, "a", rec)
    a.step()
    clock.advance(2)
    api.put_lease({**api.spec(), "holderIdentity": "intruder"})   # e.g. an admin edits the Lease
    a.step()
    assert not a.is_leader() and rec.times("stopped") == [clock.t]
    assert api.spec()["holderIdentity"] == "intruder"


def test_partitioned_leader_stops_before_the_successor_starts():
    """Two electors in simulated time: never two leaders, and the old one stops first."""
    clock = FakeClock()
    api = FakeApi(clock)
    net_a = Partitionable(api, clock)
    ra, rb = Recorder(clock), Recorder(clock)
    a, b = elector(net_a, clock, "a", ra), elector(api, clock, "b", rb)
    wake = {"a": clock.t, "b": clock.t + 0.5}
    both = {"a": a, "b": b}
    partition_at = clock.t + 20
    while clock.t < partition_at + 60:
        who = min(wake, key=wake.get)
        clock.t = max(clock.t, wake[who])
        if clock.t >= partition_at:
            net_a.down = True
        wake[who] = clock.t + both[who].step()
        assert not (a.is_leader() and b.is_leader()), clock.t
    assert ra.times("started") and ra.times("stopped")
    assert rb.times("started")
    assert ra.times("stopped")[0] < rb.times("started")[0]
    assert api.spec()["holderIdentity"] == "b" and api.spec()["leaseTransitions"] == 1


def test_reacquire_false_finishes_after_losing():
    clock = FakeClock()
    api = FakeApi(clock)
    net = Partitionable(api, clock)
    c = LeaderElectionConfig(namespace=NS, name=NAME, identity="a")
    a = LeaderElector(net, c, clock=clock, reacquire=False)
    a.step()
    net.down = True
    for _ in range(20):
        d = a.step()
        if d == float("inf"):
            break
        clock.advance(d)
    assert a.finished and not a.is_leader()
    net.down = False
    assert a.step() == float("inf")


# ------------------------------------------------------------------------------ release

def test_stop_stops_leading_then_releases_and_a_successor_takes_over_at_once():
    clock = FakeClock()
    api = FakeApi(clock)
    order = []
    orig = api.request

    def logged(method, path, body=None, query=None, timeout=None):
        order.append(method)
        return orig(method, path, body, query, timeout=timeout)

    api.request = logged
    a = LeaderElector(api, LeaderElectionConfig(namespace=NS, name=NAME, identity="a"), clock=clock,
                      on_stopped_leading=lambda: order.append("stopped"))
    b = elector(api, clock, "b")
    a.step()
    clock.advance(1)
    b.step()
    assert not b.is_leader()
    transitions = api.spec()["leaseTransitions"]
    order.clear()
    a.stop()
    assert order == ["stopped", "PUT"]
    spec = api.spec()
    assert spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == transitions
    assert not a.is_leader()
    clock.advance(0.1)
    b.step()                   # an empty holder may be taken at once
    assert b.is_leader() and api.spec()["leaseTransitions"] == transitions + 1


def test_release_is_a_noop_when_not_holding():
    clock = FakeClock()
    api = FakeApi(clock)
    api.put_lease({"holderIdentity": "other", "leaseDurationSeconds": 15, "acquireTime": None,
                   "renewTime": None, "leaseTransitions": 0})
    b = elector(api, clock, "b")
    b.step()
    n = len(api.calls)
    assert b.release() is True and len(api.calls) == n
    assert api.spec()["holderIdentity"] == "other"


def test_release_with_a_stale_resource_version_does_not_clobber_the_new_holder():
    clock = FakeClock()
    api = FakeApi(clock)
    a = elector(api, clock, "a")
    a.step()
    api.put_lease({**api.spec(), "holderIdentity": "b", "leaseTransitions": 1})
    assert a.release() is False
    assert api.spec()["holderIdentity"] == "b"


def test_real_thread_acquires_renews_and_releases():
    api = FakeApi(FakeClock())
    started, stopped = threading.Event(), threading.Event()
    cfg = LeaderElectionConfig(namespace=NS, name=NAME, identity="t", lease_duration=2,
                               renew_deadline=1.5, retry_period=0.2)
    a = LeaderElector(api, cfg, on_started_leading=started.set, on_stopped_leading=stopped.set).start()
    assert started.wait(3) and a.is_leader()
    time.sleep(0.5)
    assert sum(1 for m, _, _ in api.calls if m == "PUT") >= 1
    a.stop()
    assert stopped.is_set() and not a.is_leader()
    assert api.spec()["holderIdentity"] == "" and not a.thread.is_alive()
