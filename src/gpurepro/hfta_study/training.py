"""One training process of the HFTA study, and how its steps are timed.

A *unit* is what one process trains in one timed stretch: one model (each model of `serial`, each worker
of `concurrent` and `mps`) or the fused array of B models (`hfta`). Every unit builds its models (model b
seeded with `seed_for(seed, b)`, so every mode trains the same B models on the same batches), puts a
small pool of batches on the device and cycles through it (synthetic batches from the workload, or real
Tiny-ImageNet batches read once: data loading never limits the step rate), runs `warmup` untimed steps,
synchronises the device, waits at the barrier of its fellow processes if it has any, runs
`dropped_steps` more steps untimed (the first steps all B processes run together, as HFTA dropped its
first epoch), then times steps between two device synchronisations: at least `steps`, and on until at
least `min_timed_s` seconds have passed, so that every timed stretch is long enough for NVML's energy
counter (which updates about every 100 ms) and a point's step count follows from time, not the reverse.
A step is forward, loss, backward and optimizer step (SGD with momentum by default), under autocast with
a gradient scaler for fp16, autocast alone for bf16, in true FP32 (TF32 off) for fp32. On CUDA,
ResNet-18 runs channels-last in every mode: a single model as usual, the fused array with FusedArray's
channels-last layout (the B convolutions become one NHWC grouped convolution; see gpurepro.hfta.fused).

Step kinds: torch's stock eager step; `graphs`, each step replayed as one CUDA graph (graphs.py);
`compiled`, the module's forward and backward compiled by torch.compile after one eager step (which
does the one-time work compiling must not trace: cuDNN's algorithm search, the fused convolutions'
choice of form, lazy optimizer state), graphed too where `graphs` is set.
"""

from __future__ import annotations

import functools
import math
import os
import resource
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import nn

from ..datasets.specs import TINY_IMAGENET
from ..point_failure import PointFailed
from ..precision import AUTOCAST, set_matmul_precision
from .graphs import EAGER_STEPS_BEFORE_CAPTURE, GraphedStep

if TYPE_CHECKING:
    from ..hfta import WorkloadSpec

MOMENTUM = 0.9
GRAPH_REPLAYS_BEFORE_TIMING = 2  # the first replay also uploads the graph to the device
Batch = tuple[torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class TrainSettings:
    """What every unit of one sweep point shares (picklable: it travels to the worker processes)."""

    workload: str
    batch_size: int
    precision: str
    steps: int
    warmup: int
    optimizer: str
    lr: float
    seed: int
    device: str  # "cpu" or "cuda:<index>"
    image_size: int = 64
    seq_len: int = 128
    data_source: str = "synthetic"
    data_root: str | None = None
    data_batches: int = 4
    threads: int | None = None  # CPU threads of this process; None keeps torch's default
    graphs: bool = False  # each step replayed as one CUDA graph (graphs.py), after eager warm-up
    compiled: bool = False  # the module compiled by torch.compile after one eager warm-up step
    min_timed_s: float = 0.0  # timed steps go on until this long has passed (at least `steps` of them)
    dropped_steps: int = 0  # untimed steps after the warm-up and the barrier (HFTA's dropped first epoch)
    # the fused array's 2-D convolution form (hfta.conv_forms: auto, grouped, matmul, triton)
    conv_form: str = "auto"
    # channels-last images and weights: None for the study's choice (ResNet-18 on a GPU), else forced
    channels_last: bool | None = None


@dataclass(frozen=True)
class UnitResult:
    """One unit's timed stretch: host wall-clock bounds (comparable across processes) and what ran."""

    unit: int
    models: int
    pid: int
    t_start_unix_s: float
    t_end_unix_s: float
    steps: int
    warmup_steps: int
    samples: int
    final_loss: float
    peak_memory_bytes: float
    memory_kind: str
    dropped_steps: int = 0
    min_timed_s: float = 0.0

    def row(self) -> dict[str, Any]:
        return {**asdict(self), "ms": (self.t_end_unix_s - self.t_start_unix_s) * 1e3}


def seed_for(seed: int, model: int) -> int:
    """Model b's seed (weights and batches): the same in every mode, different for every b."""
    return seed * 10_007 + model


def prepare_process(settings: TrainSettings) -> torch.device:
    """Per-process state: TF32 off (fp32 is true FP32; autocast's FP32 ops stay FP32 too), CPU threads,
    the current CUDA device, and cuDNN's benchmark mode in every mode alike: the first (warm-up) step
    times cuDNN's convolution algorithms for each shape and keeps the fastest. A fused array's grouped
    convolutions gain most: on an H100, a fused ResNet-18 step at B=32 took 46.0 ms without it and
    40.8 ms with it (hand-fused modules, the merged strategy's ops)."""
    set_matmul_precision(settings.precision)
    if settings.threads:
        torch.set_num_threads(settings.threads)
    device = torch.device(settings.device)
    if device.type == "cuda":
        torch.cuda.set_device(device)
        torch.backends.cudnn.benchmark = True
    return device


def workload_spec(settings: TrainSettings) -> WorkloadSpec:
    from .. import hfta

    classes = TINY_IMAGENET.classes if settings.data_source == "tiny-imagenet" else None
    return hfta.workload(
        settings.workload, image_size=settings.image_size, num_classes=classes, seq_len=settings.seq_len
    )


@functools.cache
def _tiny_imagenet(root: str, seed: int) -> Any:
    """The Tiny-ImageNet train split, scanned once per process (a fused array reads it for B models)."""
    from ..datasets import loaders

    return loaders.make_dataset("tiny-imagenet", "train", seed, Path(root))


def batch_stream(
    spec: WorkloadSpec, settings: TrainSettings, model: int, device: torch.device
) -> Iterator[Batch]:
    """Model b's batches on the device: seeded synthetic ones, or real Tiny-ImageNet ones (shuffled,
    seeded, flipped as for training) read without worker processes, as only a few are needed."""
    if settings.data_source == "tiny-imagenet":
        from ..datasets import loaders

        assert settings.data_root is not None
        dataset = _tiny_imagenet(settings.data_root, settings.seed)
        loader = loaders.make_loader(
            dataset, settings.batch_size, workers=0, seed=seed_for(settings.seed, model), train=True
        )
        while True:  # another epoch when the set holds fewer batches than asked for
            for images, labels in loader:
                yield images.to(device), labels.to(device)
    generator = torch.Generator().manual_seed(seed_for(settings.seed, model))
    while True:
        yield spec.make_batch(settings.batch_size, generator, device)


def _channels_last(settings: TrainSettings, device: torch.device) -> bool:
    if settings.channels_last is not None:
        return settings.channels_last
    return settings.workload == "resnet18" and device.type == "cuda"


def _to_layout(x: torch.Tensor, channels_last: bool) -> torch.Tensor:
    # Only a single model's 4-D [N, C, H, W] batch; the fused [B, N, C, H, W] one is left to the library.
    return x.contiguous(memory_format=torch.channels_last) if channels_last and x.dim() == 4 else x


class Trainer:
    """One training step of a module, as every unit of the study takes it: forward and loss under
    autocast (fp16/bf16), backward through the gradient scaler (fp16), optimizer step. Public, so that a
    benchmark times the very step the study runs rather than a copy of it."""

    def __init__(
        self,
        module: nn.Module,
        optimizer: torch.optim.Optimizer,
        loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        precision: str,
        device_type: str,
    ) -> None:
        self.module, self.optimizer, self.loss = module, optimizer, loss
        self.dtype = AUTOCAST.get(precision)
        self.device_type = device_type
        self.scaler = torch.amp.GradScaler(device_type, enabled=precision == "fp16")

    def step(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast(self.device_type, dtype=self.dtype, enabled=self.dtype is not None):
            loss = self.loss(self.module(x), y)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.detach()


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def release_cached_memory(device: str) -> None:
    """Give CUDA's cached blocks back, so that the next unit starts from the memory a fresh process
    would have; nothing on the CPU."""
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


def _reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def _peak_memory(device: torch.device) -> tuple[float, str]:
    """Peak bytes the unit held: CUDA's allocator peak, or on the CPU the process's maximum RSS."""
    if device.type == "cuda":
        return float(torch.cuda.max_memory_allocated(device)), "cuda_max_allocated"
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024, "cpu_max_rss"


def _compile(trainer: Trainer, batch: Batch) -> int:
    """One eager step on `batch`, then the trainer's module compiled (torch.compile; compiling happens at
    its first call); the number of steps run (1). The eager step does the one-time work a trace must not
    contain: cuDNN's algorithm search, the fused convolutions' timing of their forms, lazy state."""
    trainer.step(*batch)
    # each unit compiles afresh, as a job of its own would: no guards or shapes carried over from the
    # unit before (a serial point's previous model, a benchmark's other batch size)
    torch._dynamo.reset()
    trainer.module = torch.compile(trainer.module)
    return 1


def _timed_steps(
    step: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    batches: list[Batch],
    first: int,
    settings: TrainSettings,
    device: torch.device,
) -> tuple[int, float, float, torch.Tensor]:
    """At least settings.steps steps, and on until settings.min_timed_s has passed, from batch `first`:
    (steps, start, end, last loss), the bounds host wall-clock after device synchronisations. The host
    may run ahead of the device, so the window, which ends after the last step's work, is never
    shorter than the time the host measured."""
    loss = torch.zeros(())
    start = time.time()
    steps = 0
    while steps < settings.steps or time.time() - start < settings.min_timed_s:
        loss = step(*batches[(first + steps) % len(batches)])
        steps += 1
    _synchronize(device)
    return steps, start, time.time(), loss


def _run(
    trainer: Trainer,
    batches: list[Batch],
    settings: TrainSettings,
    device: torch.device,
    unit: int,
    models: int,
    start_together: Callable[[], None] | None,
) -> UnitResult:
    step, warmup = trainer.step, settings.warmup
    done = _compile(trainer, batches[0]) if settings.compiled else 0
    if settings.graphs:
        # The warm-up steps run eagerly, then the graph is captured and replayed for the last
        # GRAPH_REPLAYS_BEFORE_TIMING of them: the same batches and number of steps as eager warm-up
        # (at least EAGER_STEPS_BEFORE_CAPTURE + GRAPH_REPLAYS_BEFORE_TIMING), so both train alike.
        eager = max(warmup - GRAPH_REPLAYS_BEFORE_TIMING - done, EAGER_STEPS_BEFORE_CAPTURE)
        step = GraphedStep(trainer.step, [batches[(done + i) % len(batches)] for i in range(eager)]).step
        done += eager
        warmup = max(warmup, done + GRAPH_REPLAYS_BEFORE_TIMING)
    elif settings.compiled:
        warmup = max(warmup, done + 1)  # the compiling call is a warm-up step, never a timed one
    for i in range(done, warmup):
        step(*batches[i % len(batches)])
    _synchronize(device)
    if start_together is not None:
        start_together()  # every process starts its timed steps at the same moment
    for i in range(settings.dropped_steps):
        step(*batches[(warmup + i) % len(batches)])
    _synchronize(device)
    steps, start, end, loss = _timed_steps(step, batches, warmup + settings.dropped_steps, settings, device)
    final = float(loss.float().sum()) / models  # the mean model's loss (the fused loss sums them)
    if not math.isfinite(final):
        # A diverged run is no honest timing either: the fp16 scaler skips optimizer steps on inf.
        raise PointFailed(f"training diverged: loss {final} after {steps} timed steps (lr {settings.lr:g})")
    peak, kind = _peak_memory(device)
    samples = models * settings.batch_size * steps
    return UnitResult(
        unit, models, os.getpid(), start, end, steps, warmup, samples, final, peak, kind,
        settings.dropped_steps, settings.min_timed_s,
    )  # fmt: skip


def _optimizer(parameters: Iterator[nn.Parameter], settings: TrainSettings) -> torch.optim.Optimizer:
    if settings.optimizer != "sgd":
        return torch.optim.AdamW(parameters, lr=settings.lr, weight_decay=0.0)  # as the fused AdamW's default
    if not settings.graphs:
        return torch.optim.SGD(parameters, lr=settings.lr, momentum=MOMENTUM)
    # fused: one kernel that takes the GradScaler's scale and inf flag, so a graphed step never
    # waits for the host (see graphs.py). Its first step makes the momentum buffers uninitialised
    # (empty_like) and leaves them so when the scaler skips that step for an overflow, as fp16's first
    # steps often are; buffers started at zero make every step, the first included, the same update as
    # the default implementation's (buf = 0.9 * 0 + grad = grad).
    params = list(parameters)
    optimizer = torch.optim.SGD(params, lr=settings.lr, momentum=MOMENTUM, fused=True)
    for p in params:
        optimizer.state[p]["momentum_buffer"] = torch.zeros_like(p)
    return optimizer


@dataclass
class Unit:
    """A unit ready to train: its trainer (one step: `trainer.step(x, y)`), its batches on the device,
    and how many models it trains."""

    trainer: Trainer
    batches: list[Batch]
    device: torch.device
    models: int


def single_unit(settings: TrainSettings, model: int) -> Unit:
    """Model `model` alone, built and on the device with its batches (seeded as in every mode)."""
    device = torch.device(settings.device)
    _reset_peak(device)
    spec = workload_spec(settings)
    torch.manual_seed(seed_for(settings.seed, model))
    net = spec.make_model().to(device)
    layout = _channels_last(settings, device)
    if layout:
        net = net.to(memory_format=torch.channels_last)
    batches = [
        (_to_layout(x, layout), y)
        for x, y in islice(batch_stream(spec, settings, model, device), settings.data_batches)
    ]
    trainer = Trainer(
        net, _optimizer(net.parameters(), settings), F.cross_entropy, settings.precision, device.type
    )
    return Unit(trainer, batches, device, 1)


def fused_unit(settings: TrainSettings, count: int) -> Unit:
    """Models 0..count-1 fused into one array (gpurepro.hfta), on the same batches as `count` models."""
    from .. import hfta

    device = torch.device(settings.device)
    _reset_peak(device)
    spec = workload_spec(settings)
    models = []
    for model in range(count):
        torch.manual_seed(seed_for(settings.seed, model))
        models.append(spec.make_model())
    array = hfta.FusedArray(
        models, channels_last=_channels_last(settings, device), conv_form=settings.conv_form
    ).to(device)
    del models
    streams = [batch_stream(spec, settings, model, device) for model in range(count)]
    batches = []
    for _ in range(settings.data_batches):
        pairs = [next(stream) for stream in streams]
        images = array.arrange(torch.stack([x for x, _ in pairs]))  # channels-last once, not every step
        batches.append((images, torch.stack([y for _, y in pairs])))
    optimizer = hfta.fused_optimizer(array, settings.optimizer, settings.lr, momentum=MOMENTUM)
    trainer = Trainer(
        array, optimizer, lambda logits, y: hfta.fused_loss(logits, y).sum(), settings.precision, device.type
    )
    return Unit(trainer, batches, device, count)


def train_single(
    settings: TrainSettings, model: int, start_together: Callable[[], None] | None = None
) -> UnitResult:
    """Train model `model` alone: one model of `serial`, or the worker `model` of concurrent/mps, which
    waits in `start_together` until all B processes have warmed up."""
    unit = single_unit(settings, model)
    return _run(unit.trainer, unit.batches, settings, unit.device, model, 1, start_together)


def train_serial(settings: TrainSettings, count: int) -> list[UnitResult]:
    """B models one after another, each with its own warm-up (as B separate jobs would run)."""
    results = []
    for model in range(count):
        results.append(train_single(settings, model))
        release_cached_memory(settings.device)  # the next model starts from the memory one job would have
    return results


def train_fused(settings: TrainSettings, count: int) -> UnitResult:
    """B models fused into one array (gpurepro.hfta), trained as one, on the same batches as B models."""
    unit = fused_unit(settings, count)
    return _run(unit.trainer, unit.batches, settings, unit.device, 0, count, None)
