"""GPUs as devices in kube profiles (docs/gpu.md, "In the scheduler"): the GPUDevices filter (and
Reserve: which GPUs a pod takes) and the six GPU placement policies of the FGD experiment as score
plugins (Random, DotProd, GpuClustering, GpuPacking, BestFit, FGD) over caldera.gpu, and GPUTopology
(GPU links: whole GPUs from one NVLink island, topology.py)."""
