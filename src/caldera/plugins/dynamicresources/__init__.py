"""DynamicResources (resource.k8s.io/v1 structured parameters): see plugin.py and docs/kube/dra.md."""
