"""Volcano batch scheduling: PodGroups, Queues and Jobs; a session of configurable actions
(enqueue, allocate, backfill, preempt, reclaim) driven by plugins in tiers.

Layout: objects.py / vcjob.py (CRDs), resource.py (Volcano's resource arithmetic), info.py
(tasks, jobs, queues), nodes.py (columnar node accounting), snapshot.py (manifests -> session
state), session.py (plugin hooks with tier semantics), statement.py (atomic allocate/pipeline/
evict), conf.py (volcano-scheduler.conf), actions/, plugins/, runner.py (one session -> result).
"""
