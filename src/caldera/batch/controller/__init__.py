"""What Volcano's job controller (pkg/controllers/job) does before scheduling: Volcano Jobs
expanded into their PodGroup and pods."""
