"""kube-scheduler's default plugins, one module (or folder) each."""
