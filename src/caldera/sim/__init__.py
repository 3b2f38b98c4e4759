"""`caldera simulate`: trace-driven replay in virtual time over the same engine objects as
`schedule` and `run` (the kube Scheduler with its SchedulingQueue, or Volcano sessions)."""
