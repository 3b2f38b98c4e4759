"""Volcano's scheduler data model (pkg/scheduler/api): resources with Volcano's arithmetic,
PodGroup/Queue objects, tasks, jobs and queues, columnar node accounting, and why a task or job
does not fit (FitErrors, TaskSchedulingReason)."""
