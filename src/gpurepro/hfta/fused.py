"""B models of one architecture fused into one array that trains them at once (HFTA, MLSys'21).

Each parameter and buffer of the B models is stacked into one tensor with a leading model dimension
([B, ...]). The forward runs the architecture once for all B models, by one of two strategies:

- `merged` (merged.py, layout.py, ops/), HFTA's own: the models' activations are one tensor with their
  channels side by side, [N, B*C, ...] (an MLP's stay [B, N, features]), and the architecture's forward
  runs on it with each convolution, batch norm and linear layer replaced by its fused op holding the
  B models' stacked parameters (a convolution one grouped convolution, batch norm one batch norm over
  B*C channels, a linear layer one batched matmul): `stacked` is then an ordinary nn.Module, with no
  mode or wrapper on its forward, that costs the host about what one model costs and that torch.compile
  traces whole. Only for architectures made of the layers merged.py lists (ResNets, MLPs).
- `vmap`: torch.func. The forward runs under `vmap` over the model dimension with `functional_call`, so
  vmap's batching rules do the fusion: a convolution becomes one grouped convolution (groups = B x
  groups), a linear layer one batched matmul, an embedding one lookup in the stacked table, batch norm
  one normalisation over B x C channels. Any architecture whose ops vmap can batch (the transformer).

`strategy="auto"` (the default) takes merged where the architecture allows, vmap elsewhere. Both train
the same models (tests/test_hfta_fusion.py checks each against separately trained models).

Per-model state stays per model: batch norm's running_mean / running_var / num_batches_tracked are
stacked buffers that batch norm updates in place, each model's slice from its own batch. Dropout draws
different masks per model (vmap's `randomness="different"`; merged, a mask per element), as B separate
jobs would.

Under vmap, scaled-dot-product attention is limited to its math backend: the CPU
flash-attention kernel has no batching rule (vmap would fall back to a Python loop over the models),
and on CUDA the memory-efficient kernel's backward fails on vmap's batched layout ("LSE is not correctly
aligned", torch 2.11). vmap_repairs.VmapRepairs puts right the ops vmap's batching rules get wrong:
batch norm (channels-last) and the casts of autocast (see vmap_repairs.py).

Channels-last (`channels_last=True`, for image models on a GPU): both strategies merge the model
dimension into the channels ([B, N, C, H, W] -> [N, B*C, H, W], weights [B, O, I, k, k] -> [B*O, I, k, k])
and run one grouped convolution. Laid out as usual, that is an NCHW grouped convolution, whose weight
gradient cuDNN computes slowly (on an H100, at B=32, more than half of a fused ResNet-18 step), and every
convolution converts its operands to NHWC and back. With channels_last, the stacked weights are stored
as [B, O, k, k, I] and image inputs as [N, H, W, B, C] in memory, so the merged tensors are channels-last
views: cuDNN runs NHWC grouped kernels, and their outputs stay channels-last through the network.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, vmap
from torch.nn.attention import SDPBackend, sdpa_kernel

from .errors import FusionError
from .layout import merge_models, split_models
from .merged import runs_model_major, why_not_merged
from .ops import fuse_layers
from .ops.conv_forms import ConvForms
from .vmap_repairs import VmapRepairs

STRATEGIES = ("auto", "merged", "vmap")


def _state(model: nn.Module) -> dict[str, Tensor]:
    """Parameters and buffers by name, shared (tied) tensors under each of their names."""
    named = dict(model.named_parameters(remove_duplicate=False))
    named.update(model.named_buffers(remove_duplicate=False))
    return named


def _unique_names(model: nn.Module) -> list[str]:
    """One name per distinct tensor (the first, as named_parameters gives it)."""
    seen: set[int] = set()
    names = []
    for name, t in _state(model).items():
        if id(t) not in seen:
            seen.add(id(t))
            names.append(name)
    return names


def _describe(t: Tensor) -> str:
    return f"{tuple(t.shape)} {str(t.dtype).removeprefix('torch.')} on {t.device}"


def check_same_architecture(models: Sequence[nn.Module]) -> None:
    """Raise FusionError naming the first model that differs from model 0 (class, hyperparameters as
    its repr shows them, names, shapes, dtypes or devices of its parameters and buffers)."""
    first = models[0]
    reference = {name: _describe(t) for name, t in _state(first).items()}
    for i, model in enumerate(models[1:], start=1):
        if type(model) is not type(first):
            raise FusionError(
                f"cannot fuse: model {i} is a {type(model).__qualname__}, "
                f"model 0 a {type(first).__qualname__}"
            )
        state = {name: _describe(t) for name, t in _state(model).items()}
        for name in sorted(reference.keys() | state.keys()):
            if reference.get(name) != state.get(name):
                raise FusionError(
                    f"cannot fuse: model {i}'s '{name}' is {state.get(name, 'missing')}, "
                    f"model 0's is {reference.get(name, 'missing')}"
                )
        # same tensors but other settings (a batch norm's momentum, an activation): name the first
        for ours, theirs in itertools.zip_longest(
            repr(first).splitlines(), repr(model).splitlines(), fillvalue="(nothing)"
        ):
            if ours != theirs:
                raise FusionError(
                    f"cannot fuse: model {i} has {theirs.strip()!r} where model 0 has {ours.strip()!r}"
                )


def _assign(module: nn.Module, name: str, tensor: Tensor) -> None:
    """Put `tensor` in place of the parameter or buffer `name` (a dotted path) of `module`."""
    owner_name, _, leaf = name.rpartition(".")
    owner = module.get_submodule(owner_name)
    if leaf in owner._parameters:
        old = owner._parameters[leaf]
        owner._parameters[leaf] = nn.Parameter(tensor, requires_grad=old is None or old.requires_grad)
    else:
        owner._buffers[leaf] = tensor


def _load(skeleton: nn.Module, tensors: dict[str, Tensor]) -> nn.Module:
    """A copy of `skeleton` (a model on the meta device) holding `tensors`, given under the names of
    _unique_names: a tensor registered under several names (tied weights) stays one tensor."""
    module = copy.deepcopy(skeleton)
    by_source: dict[int, Tensor] = {}
    for name, meta in _state(skeleton).items():
        if id(meta) not in by_source:
            by_source[id(meta)] = tensors[name]
        _assign(module, name, by_source[id(meta)])
    return module


def _channels_last_weight(t: Tensor) -> Tensor:
    """Stacked conv weights [B, O, I, kh, kw] stored as [B, O, kh, kw, I]: each model's weight is
    channels-last, and merging B into O (vmap's grouped convolution) is a channels-last view."""
    return t.permute(0, 1, 3, 4, 2).contiguous().permute(0, 1, 4, 2, 3)


def _channels_last_images(x: Tensor) -> Tensor:
    """Stacked images [B, N, C, H, W] stored as [N, H, W, B, C] (a no-op if they already are): merging
    B into C (vmap's grouped convolution) is a channels-last view of [N, B*C, H, W]."""
    if x.permute(1, 3, 4, 0, 2).is_contiguous():
        return x
    return x.permute(1, 3, 4, 0, 2).contiguous().permute(3, 0, 4, 1, 2)


def _strategy(asked: str, model: nn.Module) -> str:
    """The strategy an array of `model`s runs: `merged` where the architecture allows, else `vmap`."""
    if asked not in STRATEGIES:
        raise FusionError(f"strategy must be one of {', '.join(STRATEGIES)}; got {asked!r}")
    if asked == "vmap":
        return asked
    reason = why_not_merged(model)
    if reason and asked == "merged":
        raise FusionError(f"cannot run merged: {reason}")
    return "vmap" if reason else "merged"


class FusedArray(nn.Module):
    """B models of one architecture as one module: input [B, N, *sample], logits [B, N, classes].

    `stacked` holds the architecture with every parameter and buffer stacked to [B, ...], under the
    models' own names (`parameters()`, `state_dict()`, `.to(device)` work on it): merged, with its layers
    replaced by fused ops (ops/); under vmap, the architecture's own modules, called through
    functional_call.
    `strategy`: "auto", "merged" or "vmap" (see the module docstring); `self.strategy` is the one run.
    `conv_form`: how the merged strategy runs 2-D convolutions, "auto", "grouped", "matmul" or "triton"
    (see ops.conv_forms.ConvForms); `self.conv_forms` records what "auto" chose for each shape."""

    def __init__(
        self,
        models: Sequence[nn.Module],
        channels_last: bool = False,
        strategy: str = "auto",
        conv_form: str = "auto",
    ) -> None:
        super().__init__()
        models = list(models)
        if not models:
            raise FusionError("cannot fuse an empty list of models (B must be at least 1)")
        bad = [i for i, m in enumerate(models) if not isinstance(m, nn.Module)]
        if bad:
            kind = type(models[bad[0]]).__qualname__
            raise FusionError(f"cannot fuse: item {bad[0]} is a {kind}, not a module")
        check_same_architecture(models)
        self.B = len(models)
        self.strategy = _strategy(strategy, models[0])
        self.conv_forms = ConvForms(conv_form)
        if conv_form != "auto" and self.strategy != "merged":
            raise FusionError(f"conv_form={conv_form!r} applies to the merged strategy; this array runs vmap")
        # the architecture without storage: unfuse() fills copies of it, one per model
        self._skeleton = (copy.deepcopy(models[0]).to("meta"),)  # a tuple: not a registered submodule
        states = [_state(m) for m in models]
        stacked = {
            name: torch.stack([state[name].detach() for state in states]) for name in _unique_names(models[0])
        }
        self.channels_last = channels_last
        if channels_last:
            stacked = {n: _channels_last_weight(t) if t.dim() == 5 else t for n, t in stacked.items()}
        # the skeleton's copy keeps each submodule's training mode (a frozen batch norm stays in eval)
        self.stacked = _load(self._skeleton[0], stacked)
        # merged: an MLP's activations stay [B, N, features]; other models' are merged [N, B*C, ...]
        self.model_major = self.strategy == "merged" and runs_model_major(models[0])
        if self.strategy == "merged":  # the same tensors, under the same names, in fused layers
            self.stacked = fuse_layers(self.stacked, self.B, self.conv_forms)
        self.training = models[0].training

    def _forward_one(self, params: dict[str, Tensor], buffers: dict[str, Tensor], x: Tensor) -> Tensor:
        return functional_call(self.stacked, (params, buffers), (x,))

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() < 2 or x.shape[0] != self.B:
            raise FusionError(
                f"a fused array of {self.B} models takes input [B={self.B}, N, ...], got {tuple(x.shape)}"
            )
        x = self.arrange(x)
        if self.model_major and x.dim() == 3:
            return self.stacked(x)
        if self.strategy == "merged":
            return split_models(self.stacked(merge_models(x)), self.B)
        params = dict(self.stacked.named_parameters())
        buffers = dict(self.stacked.named_buffers())
        with sdpa_kernel([SDPBackend.MATH]), VmapRepairs(x.device.type):
            return vmap(self._forward_one, randomness="different")(params, buffers, x)

    def arrange(self, x: Tensor) -> Tensor:
        """`x` as the forward lays it out (channels-last images stored once, not at every step)."""
        return _channels_last_images(x) if self.channels_last and x.dim() == 5 else x

    def unfuse(self) -> list[nn.Module]:
        """B independent models holding copies of the array's current weights and buffers (on the
        array's device and dtype, each submodule in the array's training mode)."""
        state = _state(self.stacked)
        names = _unique_names(self.stacked)
        models = []
        for b in range(self.B):
            model = _load(self._skeleton[0], {name: state[name][b].detach().clone() for name in names})
            for name, submodule in model.named_modules():  # the array's training modes, module by module
                submodule.training = self.stacked.get_submodule(name).training
            models.append(model)
        return models

    def extra_repr(self) -> str:
        return f"B={self.B}, channels_last={self.channels_last}, strategy={self.strategy}"


def fused_loss(logits: Tensor, targets: Tensor) -> Tensor:
    """Per-model mean cross-entropy: logits [B, N, C], targets [B, N] -> [B].

    Backpropagating `.sum()` gives each model exactly the gradient of its own mean loss: model b's
    parameters appear only in term b."""
    if logits.dim() != 3 or targets.shape != logits.shape[:2]:
        raise FusionError(
            f"fused_loss takes logits [B, N, C] and targets [B, N], got {tuple(logits.shape)} and "
            f"{tuple(targets.shape)}"
        )
    b, n, c = logits.shape
    losses = F.cross_entropy(logits.reshape(b * n, c), targets.reshape(b * n), reduction="none")
    return losses.view(b, n).mean(dim=1)
