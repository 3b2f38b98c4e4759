"""A live scheduler assembled: API client, informers -> cache, scheduling loop (kube profile or
Volcano session), async binder, status writer, leader election, metrics/health server, and a
graceful stop. `caldera run` builds one; tests build them in-process too."""
from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from .. import gcpolicy
from ..batch.conf import VolcanoConf
from ..config import featuregates
from ..errors import ConfigError
from .apicache import PLUGIN_RESOURCES, STORAGE_PLUGINS
from .binder import Binder
from .cache import ClusterCache
from .informer import RESOURCES, Informer, wait_for_sync
from .leader import LeaderElectionConfig, LeaderElector
from .loop import BatchLoop, KubeLoop
from .metrics import SchedulerMetrics
from .prebind import ApiWriter
from .server import MetricsServer
from .status import StatusWriter

log = logging.getLogger("caldera.run")
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?$")


def parse_duration(v, where: str) -> float:
    """A Go duration ("15s", "1m30s", "500ms") or a number of seconds."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    m = _DURATION.match(str(v).strip()) if v is not None else None
    if not m or not any(m.groups()):
        raise ConfigError(f"{where}: {v!r} is not a duration; write e.g. 15s, 1m30s or 500ms")
    h, mi, s, ms = (float(x) if x else 0.0 for x in m.groups())
    return h * 3600 + mi * 60 + s + ms / 1000


@dataclass
class RunOptions:
    leader_elect: bool | None = None          # None: the config's leaderElection.leaderElect (default true, as kube)
    lease_duration: float | None = None
    renew_deadline: float | None = None
    retry_period: float | None = None
    lease_namespace: str | None = None
    lease_name: str | None = None
    metrics_addr: str = "127.0.0.1:10259"
    bind_workers: int = 64
    seed: int = 0
    scheduler_name: str | None = None         # Volcano: the pods' schedulerName (default "volcano")
    schedule_period: float = 1.0              # Volcano: seconds between sessions
    identity: str | None = None
    tracing: Any = None                       # tracing.Tracing, or None (no spans)
    extra: dict = field(default_factory=dict)


def leader_config(config, opts: RunOptions) -> tuple[bool, LeaderElectionConfig]:
    raw = getattr(config, "leader_election", {}) or {}
    where = f"{getattr(config, 'source', 'config')}: leaderElection"
    enabled = opts.leader_elect if opts.leader_elect is not None else bool(raw.get("leaderElect", True))
    lec = LeaderElectionConfig(name="caldera-scheduler")   # kube's default name would fight kube-scheduler
    if "leaseDuration" in raw:
        lec.lease_duration = parse_duration(raw["leaseDuration"], f"{where}.leaseDuration")
    if "renewDeadline" in raw:
        lec.renew_deadline = parse_duration(raw["renewDeadline"], f"{where}.renewDeadline")
    if "retryPeriod" in raw:
        lec.retry_period = parse_duration(raw["retryPeriod"], f"{where}.retryPeriod")
    lec.namespace = str(raw.get("resourceNamespace") or lec.namespace)
    lec.name = str(raw.get("resourceName") or lec.name)
    for attr, v in (("lease_duration", opts.lease_duration), ("renew_deadline", opts.renew_deadline),
                    ("retry_period", opts.retry_period), ("namespace", opts.lease_namespace),
                    ("name", opts.lease_name), ("identity", opts.identity)):
        if v is not None:
            setattr(lec, attr, v)
    if enabled:
        lec.validate()
    return enabled, lec


class LiveScheduler:
    def __init__(self, api, config, opts: RunOptions | None = None, registry=None):
        self.api = api
        self.config = config
        self.opts = opts or RunOptions()
        self.metrics = SchedulerMetrics()
        # clientConnection.qps/burst (kube configs; kube's defaults 50/100): requests wait on
        # client-go's token bucket -- one for the scheduler's client (lists, binds, status), one for
        # its events, one for leader election, as kube-scheduler builds a clientset for each.
        self.client_connection = getattr(config, "client_connection", None)
        api = self._throttled(api)
        self.client = api
        self.gc = gcpolicy.GcPauses(self.metrics.gc_pause, window=100_000)
        self.batch = isinstance(config, VolcanoConf)
        if self.batch:
            self.names = [self.opts.scheduler_name or "volcano"]
        else:
            self.names = [p.scheduler_name for p in config.profiles]
        self.cache = ClusterCache(self.names, on_warning=lambda m: log.warning(m))
        self.status = StatusWriter(api, self.names[0])
        self.elect, self.lec = leader_config(config, self.opts)
        self.elector: LeaderElector | None = None
        self.lost_leadership = threading.Event()

        def binder_factory(**kw):
            return Binder(api, self.cache, workers=self.opts.bind_workers, **kw)

        can_act = self._can_act
        tracer = getattr(self.opts.tracing, "tracer", None)
        self.loop: BatchLoop | KubeLoop
        if self.batch:
            self.loop = BatchLoop(config, self.cache, binder_factory, self.status, metrics=self.metrics,
                                  seed=self.opts.seed, can_act=can_act, period=self.opts.schedule_period,
                                  scheduler_name=self.names[0], tracer=tracer)
        else:
            self.loop = KubeLoop(config, self.cache, binder_factory, self.status, metrics=self.metrics,
                                 seed=self.opts.seed, can_act=can_act, registry=registry, tracer=tracer)
        c = self.cache
        self.informers = [
            Informer(api, "nodes", on_add=c.on_node_add, on_update=c.on_node_update, on_delete=c.on_node_delete,
                     on_add_many=c.on_node_add_many),
            Informer(api, "priorityclasses", on_add=c.on_priority_class,
                     on_update=lambda o, n: c.on_priority_class(n),
                     on_delete=lambda o: c.on_priority_class(o, deleted=True)),
            Informer(api, "pods", on_add=c.on_pod_add, on_update=c.on_pod_update, on_delete=c.on_pod_delete),
        ]
        if not self.batch:
            # kube profiles: namespace labels (InterPodAffinity) and pod owners (PodTopologySpread's
            # default constraints), as kube-scheduler's informers (deploy/clusterrole.yaml)
            for plural in ("namespaces", "services", "replicationcontrollers", "replicasets", "statefulsets"):
                add, upd, dele = c.workload_handlers(RESOURCES[plural].kind)
                self.informers.append(Informer(api, plural, on_add=add, on_update=upd, on_delete=dele))
            # Coscheduling (opt-in): scheduling.x-k8s.io PodGroups (live/xpodgroups.py)
            kube_loop = self.loop
            assert isinstance(kube_loop, KubeLoop)
            # DRA and storage objects, for the plugins that read them
            self._api_object_informers(api, kube_loop)
            if any(fw.plugin("Coscheduling") for fw in kube_loop.scheduler.frameworks.values()):
                from .xpodgroups import RESOURCE as XPG
                from .xpodgroups import XPodGroups
                xpg = XPodGroups(kube_loop.scheduler.pod_groups, c)
                self.informers.append(Informer(api, XPG, on_add=xpg.on_add, on_update=xpg.on_update,
                                               on_delete=xpg.on_delete, name="podgroups.scheduling.x-k8s.io"))
            # kube's Workloads (GangScheduling), as kube-scheduler: only with GenericWorkload on
            if featuregates.enabled(featuregates.GENERIC_WORKLOAD):
                from .gangworkloads import GangWorkloads
                gw = GangWorkloads(kube_loop.scheduler.gang_workloads, c)
                self.informers.append(Informer(api, "workloads", on_add=gw.on_add, on_update=gw.on_update,
                                               on_delete=gw.on_delete, name="workloads.scheduling.k8s.io"))
        if self.batch:
            self.informers += [
                Informer(api, "podgroups", on_add=c.on_podgroup, on_update=lambda o, n: c.on_podgroup(n),
                         on_delete=lambda o: c.on_podgroup(o, deleted=True)),
                Informer(api, "queues", on_add=c.on_queue, on_update=lambda o, n: c.on_queue(n),
                         on_delete=lambda o: c.on_queue(o, deleted=True)),
                # always, as Volcano informs them: allocate's HyperNode path serves any job with a
                # networkTopology, with or without network-topology-aware; without the CRD the
                # LIST is a 404 and the informer idles (synced, no HyperNodes)
                Informer(api, "hypernodes", on_add=c.on_hypernode, on_update=lambda o, n: c.on_hypernode(n),
                         on_delete=lambda o: c.on_hypernode(o, deleted=True)),
            ]
            # PDBs and ResourceQuotas only for a conf whose plugins read them: a conf without them
            # needs no rights on them (deploy/clusterrole.yaml), and readiness never waits on a
            # watch the API server would refuse
            plugins = {opt.name for tier in config.tiers for opt in tier.plugins}
            if "pdb" in plugins:
                self.informers.append(
                    Informer(api, "poddisruptionbudgets", on_add=c.on_pdb, on_update=lambda o, n: c.on_pdb(n),
                             on_delete=lambda o: c.on_pdb(o, deleted=True)))
            if "resourcequota" in plugins:
                self.informers.append(
                    Informer(api, "resourcequotas", on_add=c.on_resource_quota,
                             on_update=lambda o, n: c.on_resource_quota(n),
                             on_delete=lambda o: c.on_resource_quota(o, deleted=True)))
            if "numa-aware" in plugins:
                self.informers.append(
                    Informer(api, "numatopologies", on_add=c.on_numatopology,
                             on_update=lambda o, n: c.on_numatopology(n),
                             on_delete=lambda o: c.on_numatopology(o, deleted=True)))
        self.server = MetricsServer(self.opts.metrics_addr, metrics=self.metrics, ready=self.ready,
                                    profile=self.loop.profiler.request)
        self.thread: threading.Thread | None = None
        self.stopped = threading.Event()

    def _api_object_informers(self, api, loop: KubeLoop) -> None:
        """DRA and storage informers, each only when an enabled plugin reads it (as kube-scheduler
        starts an informer when a plugin asks for its lister), into the cache's ApiObjects; the
        scheduler reads them (Scheduler.dra / .storage) and its PreBind plugins write through the
        ApiWriter (live/prebind.py). ResourceClaimTemplates are not read: kube's resourceclaim
        controller creates the claims, so Caldera does not stand in for it here."""
        sched = loop.scheduler
        enabled = {name for fw in sched.frameworks.values() for name in fw.instances}
        plurals: list[str] = []
        for plugin, resources in PLUGIN_RESOURCES.items():
            if plugin in enabled:
                plurals += [r for r in resources if r not in plurals]
        if not plurals:
            return
        objs = self.cache.objects
        sched.dra_makes_template_claims = False
        sched.api_writer = ApiWriter(api, self.cache)
        if "DynamicResources" in enabled:
            sched.dra = objs.dra
            objs.on_dra.append(lambda dra: setattr(sched, "dra", dra))
        if any(p in enabled for p in STORAGE_PLUGINS):
            sched.storage = objs.storage
        for plural in plurals:
            add, upd, dele, many = objs.handlers(plural)
            self.informers.append(Informer(api, plural, on_add=add, on_update=upd, on_delete=dele, on_add_many=many))

    # ---- state ------------------------------------------------------------------------
    def _can_act(self) -> bool:
        if not all(i.has_synced() for i in self.informers):
            return False
        return self.elector is None or self.elector.is_leader()

    def ready(self) -> tuple[bool, str]:
        waiting = [i.name for i in self.informers if not i.has_synced()]
        if waiting:
            return False, f"informers not synced: {', '.join(waiting)}"
        return True, "ok"

    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader()

    def _throttled(self, api):
        cc = self.client_connection
        if cc is None or not hasattr(api, "throttled"):
            return api
        return api.throttled(cc.qps, cc.burst)

    # ---- lifecycle ----------------------------------------------------------------------
    def start(self, sync_timeout: float = 60.0) -> LiveScheduler:
        self.gc.install()
        self.server.start()
        for inf in self.informers:
            inf.start()
        if not wait_for_sync(self.informers, sync_timeout):
            waiting = [i.name for i in self.informers if not i.has_synced()]
            log.warning("informers not synced after %ss: %s", sync_timeout, ", ".join(waiting))
        else:
            gcpolicy.after_sync()       # `caldera run`: the synced cache is long-lived; freeze it
        log.info("gc pauses until the informers synced: %s", self.gc.line())
        self.gc.reset()                 # the summary on stop covers the scheduling loop's time
        if self.elect:
            self.elector = LeaderElector(self._throttled(self.api), self.lec,
                                         on_started_leading=lambda: log.info("became leader (%s)", self.lec.identity),
                                         on_stopped_leading=self._stopped_leading).start()
        self.thread = threading.Thread(target=self.loop.run, name="caldera-scheduler", daemon=True)
        self.thread.start()
        return self

    def _stopped_leading(self) -> None:
        log.warning("leadership lost: scheduling stopped until the lease is held again")
        self.lost_leadership.set()

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM: stop taking new pods, finish the binds in flight, release the lease, stop
        watching, close the endpoints."""
        if self.stopped.is_set():
            return
        self.stopped.set()
        self.loop.stop(timeout)
        if self.thread is not None:
            self.thread.join(timeout)
        if self.elector is not None:
            self.elector.stop()
        for inf in self.informers:
            inf.stop()
        self.server.stop()
        if self.opts.tracing is not None:
            self.opts.tracing.shutdown()          # flush the spans still queued
        self.gc.uninstall()
        log.info("gc pauses since the informers synced: %s", self.gc.line())
