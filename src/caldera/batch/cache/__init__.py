"""What Volcano's scheduler cache provides a session (pkg/scheduler/cache): the snapshot, here
built from manifests (or, in live mode, from informers)."""
