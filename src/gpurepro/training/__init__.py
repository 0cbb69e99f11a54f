"""ResNet-50 training: the data-parallel throughput study (`ddp`) and the variability study's noise workload.

One training loop serves both, as the original studies used ResNet-50 v1.5 training twice: NVIDIA's
DeepLearningExamples recipe (SGD with momentum, label smoothing 0.1, AMP, channels-last) ran on the other
GPUs of a node as noise while one GPU was measured, and a synthetic Horovod benchmark measured images/s
over several GPUs. Here DistributedDataParallel over NCCL (gloo on the CPU) takes Horovod's place.

- `plan`: what the workflow decides at parse time (GPU counts that fit the node, loader workers).
- `model`: the model, its loss and optimiser (the recipe).
- `batches`: synthetic batches made once on the device and cycled, or the project's loaders.
- `distributed`: ranks, devices and the process group under torchrun.
- `loop`: warm-up, then timed logging intervals until an iteration count, a duration or a stop signal.
- `rank`: one process of a run (device, process group, training, rank 0's table); what torchrun starts.
- `launch`: running the training under torchrun for a list of GPUs, and filing a failed run.
- `summary`, `plot`: the ddp table (images/s, scaling efficiency against one GPU) and its figure.
- `noise`: the training as a background workload that is stopped cleanly when a measurement ends.
"""
