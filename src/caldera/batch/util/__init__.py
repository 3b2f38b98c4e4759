"""Helpers of Volcano's pkg/scheduler/util that are not tied to one action: the priority queue."""
