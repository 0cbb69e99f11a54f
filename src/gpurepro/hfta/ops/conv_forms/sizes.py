"""Sizes that every convolution form works out the same way: a stride or padding as a pair, an output
side, the blocks that cover a size, and the power of two a Triton block is rounded up to."""

from __future__ import annotations

from typing import Any


def as_pair(value: Any) -> tuple[int, int]:
    """An int or a pair (a convolution's stride, padding, kernel) as a pair."""
    return (value, value) if isinstance(value, int) else tuple(value)  # type: ignore[return-value]


def out_size(size: int, k: int, stride: int, padding: int) -> int:
    """A convolution's output side for an input side `size`, kernel side `k`."""
    return (size + 2 * padding - k) // stride + 1


def cdiv(size: int, block: int) -> int:
    """Blocks of `block` that cover `size`."""
    return -(-size // block)


def power_of_two(size: int) -> int:
    """The smallest power of two >= size (Triton's blocks are powers of two)."""
    return 1 << (size - 1).bit_length()
