"""Triton kernels of a merged convolution inside the network, as implicit GEMMs: forward, input gradient
and weight gradient, each one launch for all B models (layers.py launches them).

Layouts: the merged input x and its gradient [P = N*H*W pixels, B, C] (a merged channels-last
[N, B*C, H, W] as it lies in memory: no copy); the output y and its gradient g [M = N*HO*WO pixels, B,
OC], contiguous; the weights [B*OC, C, KH, KW] in the parameter's layout, strides W_SO, W_SC, W_SI, W_SJ
(channels-last or not), cast to the activations' dtype as loaded where they are not in it; the weight
gradient is written in float32 in that layout.

Reductions run over one kernel tap at a time in blocks of BLOCK_K channels (C and OC are multiples of
BLOCK_K), so a block's rows are whole contiguous channel runs of one pixel, one mask per pixel for the
zero padding. Loads outside the image are masked, never read. The row offsets are declared multiples of
16 elements (C and OC are multiples of 16): without that the compiler cannot prove a row's channels
aligned and loads them an element at a time.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _tap_rows(n, y, x, b, H, W, B, C):
    """Offset in a [pixels, B, C] tensor of pixel (n, y, x)'s channels of model b (int64)."""
    return (((n * H + y) * W + x).to(tl.int64) * B + b) * C


@triton.jit
def _weights_at(b, o, c, i, j, OC, W_SO, W_SC, W_SI, W_SJ):
    """Offset of the weight of model b, output channel o, input channel c, tap (i, j) (int64)."""
    return (b * OC + o).to(tl.int64) * W_SO + c * W_SC + i * W_SI + j * W_SJ


@triton.jit
def layer_forward_kernel(
    x_ptr, w_ptr, bias_ptr, y_ptr,
    M, H, W, HO, WO, B, C, OC, KW, STRIDE_H, STRIDE_W, PAD_H, PAD_W, DEPTH, W_SO, W_SC, W_SI, W_SJ,
    HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    """y[m, b, o] = sum over taps (i, j) and channels c of x[pixel m's tap (i, j), b, c] * w[b*OC + o, c,
    i, j] (+ bias[b, o]); DEPTH = KH*KW*C. Grid: (B * OC blocks, M blocks)."""
    per_model = tl.cdiv(OC, BLOCK_N)
    b = tl.program_id(0) // per_model
    ro = (tl.program_id(0) % per_model) * BLOCK_N + tl.arange(0, BLOCK_N)
    rm = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    rc = tl.arange(0, BLOCK_K)
    n = rm // (HO * WO)
    y0 = rm % (HO * WO) // WO * STRIDE_H - PAD_H
    x0 = rm % WO * STRIDE_W - PAD_W
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, DEPTH, BLOCK_K):
        i = k0 // C // KW
        j = k0 // C % KW
        c0 = tl.multiple_of(k0 % C, 16)
        y = y0 + i
        x = x0 + j
        inside = (rm < M) & (y >= 0) & (y < H) & (x >= 0) & (x < W)
        rows = tl.multiple_of(_tap_rows(n, y, x, b, H, W, B, C) + c0, 16)
        field = tl.load(x_ptr + rows[:, None] + rc[None, :], mask=inside[:, None], other=0.0)
        at = _weights_at(b, ro[:, None], c0 + rc[None, :], i, j, OC, W_SO, W_SC, W_SI, W_SJ)
        weights = tl.load(w_ptr + at, mask=(ro < OC)[:, None], other=0.0).to(field.dtype)  # [o, c]
        acc += tl.dot(field, tl.trans(weights))
    if HAS_BIAS:
        acc += tl.load(bias_ptr + b * OC + ro, mask=ro < OC, other=0.0).to(tl.float32)[None, :]
    out = (rm.to(tl.int64)[:, None] * B + b) * OC + ro[None, :]
    tl.store(y_ptr + out, acc.to(y_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (ro[None, :] < OC))


@triton.jit
def layer_input_grad_kernel(
    g_ptr, w_ptr, dx_ptr,
    N, H, W, HO, WO, B, C, OC, KH, KW, STRIDE_H, STRIDE_W, PAD_H, PAD_W, W_SO, W_SC, W_SI, W_SJ,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    """dx[p, b, c] = sum over the taps (i, j) that reach input pixel p from an output pixel m, and over
    o, of g[m, b, o] * w[b*OC + o, c, i, j]. Grid: (B * C blocks, pixel blocks, STRIDE_H * STRIDE_W): the
    third axis is the input pixels' phase (y % STRIDE_H, x % STRIDE_W), and the pixels of one phase are
    reached by the same taps, so a strided convolution's gradient loops only over taps that contribute
    (a quarter of them at stride 2) and no pixel's row is masked for its phase."""
    per_model = tl.cdiv(C, BLOCK_N)
    b = tl.program_id(0) // per_model
    rc = (tl.program_id(0) % per_model) * BLOCK_N + tl.arange(0, BLOCK_N)
    phase_y = tl.program_id(2) // STRIDE_W
    phase_x = tl.program_id(2) % STRIDE_W
    rows_y = tl.cdiv(H - phase_y, STRIDE_H)  # input rows and columns of this phase
    cols_x = tl.cdiv(W - phase_x, STRIDE_W)
    rp = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    n = rp // (rows_y * cols_x)
    y = rp % (rows_y * cols_x) // cols_x * STRIDE_H + phase_y
    x = rp % cols_x * STRIDE_W + phase_x
    pixel = rp < N * rows_y * cols_x
    first_i = (phase_y + PAD_H) % STRIDE_H  # the first tap row with y + PAD_H - i a multiple of the stride
    first_j = (phase_x + PAD_W) % STRIDE_W
    taps_j = tl.cdiv(KW - first_j, STRIDE_W)
    taps = tl.cdiv(KH - first_i, STRIDE_H) * taps_j
    ro = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, taps * OC, BLOCK_K):
        tap = k0 // OC
        i = first_i + tap // taps_j * STRIDE_H
        j = first_j + tap % taps_j * STRIDE_W
        yo = (y + PAD_H - i) // STRIDE_H  # exact: the phase makes it a multiple
        xo = (x + PAD_W - j) // STRIDE_W
        inside = pixel & (y + PAD_H - i >= 0) & (yo < HO) & (x + PAD_W - j >= 0) & (xo < WO)
        rows = tl.multiple_of(_tap_rows(n, yo, xo, b, HO, WO, B, OC) + k0 % OC, 16)
        grad = tl.load(g_ptr + rows[:, None] + ro[None, :], mask=inside[:, None], other=0.0)
        at = _weights_at(b, (k0 % OC + ro)[:, None], rc[None, :], i, j, OC, W_SO, W_SC, W_SI, W_SJ)
        weights = tl.load(w_ptr + at, mask=(rc < C)[None, :], other=0.0).to(grad.dtype)  # [o, c]
        acc += tl.dot(grad, weights)
    out = tl.multiple_of(_tap_rows(n, y, x, b, H, W, B, C), 16)[:, None] + rc[None, :]
    tl.store(dx_ptr + out, acc.to(dx_ptr.dtype.element_ty), mask=pixel[:, None] & (rc[None, :] < C))


@triton.jit
def layer_weight_grad_kernel(
    x_ptr, g_ptr, part_ptr,
    M, H, W, HO, WO, B, C, OC, KW, STRIDE_H, STRIDE_W, PAD_H, PAD_W, DEPTH, ROWS_PER_SPLIT,
    W_SO, W_SC, W_SI, W_SJ,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    """part[s][b*OC + o, c, i, j] (in the parameter's layout, each split's after the last's) = sum over
    the output pixels m of split s of x[pixel m's tap (i, j), b, c] * g[m, b, o]; the weight gradient is
    part summed over s in a fixed order. Grid: (B * OC blocks, DEPTH blocks of one tap's channels,
    splits)."""
    per_model = tl.cdiv(OC, BLOCK_N)
    b = tl.program_id(0) // per_model
    ro = (tl.program_id(0) % per_model) * BLOCK_N + tl.arange(0, BLOCK_N)
    k0 = tl.program_id(1) * BLOCK_K
    rc = tl.arange(0, BLOCK_K)
    i = k0 // C // KW
    j = k0 // C % KW
    c0 = tl.multiple_of(k0 % C, 16)
    acc = tl.zeros((BLOCK_K, BLOCK_N), dtype=tl.float32)
    start = tl.program_id(2) * ROWS_PER_SPLIT
    # Up to M, not the split's end: layer 4's 512 pixels a model (B=32) in one split of 4096 ran 64 blocks,
    # 56 of them on masked zeros, at 40 TFLOP/s
    for m0 in range(start, tl.minimum(start + ROWS_PER_SPLIT, M), BLOCK_M):
        rm = m0 + tl.arange(0, BLOCK_M)
        n = rm // (HO * WO)
        y = rm % (HO * WO) // WO * STRIDE_H - PAD_H + i
        x = rm % WO * STRIDE_W - PAD_W + j
        inside = (rm < M) & (y >= 0) & (y < H) & (x >= 0) & (x < W)
        rows = tl.multiple_of(_tap_rows(n, y, x, b, H, W, B, C) + c0, 16)
        field = tl.load(x_ptr + rows[:, None] + rc[None, :], mask=inside[:, None], other=0.0)  # along c
        grad = tl.load(
            g_ptr + (rm.to(tl.int64)[:, None] * B + b) * OC + ro[None, :],
            mask=(rm < M)[:, None] & (ro < OC)[None, :], other=0.0,
        )  # fmt: skip
        acc += tl.dot(tl.trans(field), grad)
    split = tl.program_id(2).to(tl.int64) * B * OC * DEPTH
    part = split + _weights_at(b, ro[None, :], c0 + rc[:, None], i, j, OC, W_SO, W_SC, W_SI, W_SJ)
    tl.store(part_ptr + part, acc, mask=(ro < OC)[None, :])
