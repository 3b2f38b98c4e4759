"""Volcano's scheduler framework (pkg/scheduler/framework): the session with its plugins' hooks
and tier semantics, and the Statement that makes a gang's placement all-or-nothing."""
