"""Live mode (`caldera run`): Caldera as a scheduler of a real cluster.

client.py talks to the API server (kubeconfig / in-cluster auth via the `kubernetes` package,
raw JSON requests and streaming watches); informer.py keeps list+watch caches of the resources
the scheduler needs and calls handlers on add/update/delete.
"""
