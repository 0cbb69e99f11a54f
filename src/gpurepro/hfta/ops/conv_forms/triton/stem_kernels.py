"""Triton kernels of the merged convolution as an implicit GEMM (stem.py launches them).

Layouts, all contiguous: the merged input x [N*H*W pixels, B, C] (a merged channels-last
[N, B*C, H, W]); the same images rearranged, xp [B, N, HP, WP, CP]: each model's images apart,
zero-padded by the convolution's padding on every side and to CP channels (a power of two: a pixel's
channels are one aligned load); the weights w [B, K_PAD, OC_PAD], row k = (i*KW + j)*CP + c of model
b's kernel tap (i, j), input channel c, zero for padded channels and past the last tap and OC; the
output y and its gradient g [M, B, OC] with M = N*HO*WO output pixels (a merged channels-last
[N, B*OC, HO, WO]). Row m of model b's implicit matrix is the receptive field of output pixel m,
gathered from xp as it is used: no im2col copy is made, and as xp is padded no load needs a bounds
check but the last block's.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def models_apart_kernel(
    x_ptr, xp_ptr, PIXELS, N, H, W, B, C, HP, WP, PAD_H, PAD_W,
    CP: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_B: tl.constexpr,
):  # fmt: skip
    """xp[b, n, y + PAD_H, x + PAD_W, c] = x[(n, y, x), b, c], zero for c >= C (the border is left as
    it is: zeros). Grid: (pixel blocks, model blocks). A pixel's CP channels are written as one store."""
    rp = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    rb = tl.program_id(1) * BLOCK_B + tl.arange(0, BLOCK_B)
    rc = tl.arange(0, CP)
    n = rp // (H * W)
    y = rp % (H * W) // W
    x = rp % W
    pixel_model = (rp < PIXELS)[:, None, None] & (rb < B)[None, :, None]
    source = (rp.to(tl.int64)[:, None, None] * B + rb[None, :, None]) * C + rc[None, None, :]
    values = tl.load(x_ptr + source, mask=pixel_model & (rc < C)[None, None, :], other=0.0)
    row = (rb.to(tl.int64)[None, :, None] * N + n[:, None, None]) * HP + (y + PAD_H)[:, None, None]
    tl.store(
        xp_ptr + (row * WP + (x + PAD_W)[:, None, None]) * CP + rc[None, None, :], values, mask=pixel_model
    )


@triton.jit
def _field_rows(rm, b, N, HP, WP, HO, WO, CP, STRIDE_H, STRIDE_W):
    """Offset in xp of the tap (0, 0) of each output pixel rm's receptive field (int64: xp may be large)."""
    n = rm // (HO * WO)
    pixel = rm % (HO * WO)
    y0 = (pixel // WO) * STRIDE_H
    x0 = (pixel % WO) * STRIDE_W
    return (((b * N + n).to(tl.int64) * HP + y0) * WP + x0) * CP


@triton.jit
def _field_columns(rk, WP, KW, CP: tl.constexpr):
    """Offset of each column rk (tap (i, j), channel c) from its receptive field's tap (0, 0)."""
    tap = rk // CP
    return ((tap // KW) * WP + tap % KW) * CP + rk % CP


@triton.jit
def conv_forward_kernel(
    x_ptr, w_ptr, bias_ptr, y_ptr,
    M, N, HP, WP, HO, WO, B, KW, K, OC, STRIDE_H, STRIDE_W,
    HAS_BIAS: tl.constexpr, CP: tl.constexpr, K_PAD: tl.constexpr, OC_PAD: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    """y[m, b, o] = sum over k of field[m, k] * w[b, k, o] (+ bias[b, o]), x_ptr pointing at xp.
    Grid: (B * OC blocks, M blocks): the models' blocks of the same pixels run side by side."""
    b = tl.program_id(0) // (OC_PAD // BLOCK_N)
    ro = (tl.program_id(0) % (OC_PAD // BLOCK_N)) * BLOCK_N + tl.arange(0, BLOCK_N)
    rm = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    rows = _field_rows(rm, b, N, HP, WP, HO, WO, CP, STRIDE_H, STRIDE_W)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K_PAD, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        columns = _field_columns(rk, WP, KW, CP)
        inside = (rm[:, None] < M) & (rk[None, :] < K)
        field = tl.load(x_ptr + rows[:, None] + columns[None, :], mask=inside, other=0.0)
        weights = tl.load(w_ptr + (b * K_PAD + rk[:, None]) * OC_PAD + ro[None, :])
        acc += tl.dot(field, weights)
    if HAS_BIAS:
        acc += tl.load(bias_ptr + b * OC + ro, mask=ro < OC, other=0.0).to(tl.float32)[None, :]
    keep = (rm[:, None] < M) & (ro[None, :] < OC)
    out = (rm.to(tl.int64)[:, None] * B + b) * OC + ro[None, :]
    tl.store(y_ptr + out, acc.to(y_ptr.dtype.element_ty), mask=keep)


@triton.jit
def conv_weight_grad_kernel(
    x_ptr, g_ptr, part_ptr,
    M, N, HP, WP, HO, WO, B, KW, K, OC, STRIDE_H, STRIDE_W, ROWS_PER_SPLIT,
    CP: tl.constexpr, K_PAD: tl.constexpr, OC_PAD: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    """part[s, b, k, o] = sum over the pixels m of split s of field[m, k] * g[m, b, o], x_ptr pointing at
    xp; the weight gradient is part summed over s (in a fixed order: the result does not depend on
    scheduling). Grid: (B * OC blocks, K blocks, splits)."""
    b = tl.program_id(0) // (OC_PAD // BLOCK_N)
    ro = (tl.program_id(0) % (OC_PAD // BLOCK_N)) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    split = tl.program_id(2)
    columns = _field_columns(rk, WP, KW, CP)
    acc = tl.zeros((BLOCK_K, BLOCK_N), dtype=tl.float32)
    start = split * ROWS_PER_SPLIT
    for m0 in range(start, tl.minimum(start + ROWS_PER_SPLIT, M), BLOCK_M):  # the last split stops at M
        rm = m0 + tl.arange(0, BLOCK_M)
        rows = _field_rows(rm, b, N, HP, WP, HO, WO, CP, STRIDE_H, STRIDE_W)
        inside = (rm[None, :] < M) & (rk[:, None] < K)
        field_t = tl.load(x_ptr + rows[None, :] + columns[:, None], mask=inside, other=0.0)  # [K, M]
        keep = (rm[:, None] < M) & (ro[None, :] < OC)
        grad = tl.load(g_ptr + (rm.to(tl.int64)[:, None] * B + b) * OC + ro[None, :], mask=keep, other=0.0)
        acc += tl.dot(field_t, grad)
    part = ((split * B + b) * K_PAD + rk[:, None]) * OC_PAD + ro[None, :]
    tl.store(part_ptr + part, acc)
