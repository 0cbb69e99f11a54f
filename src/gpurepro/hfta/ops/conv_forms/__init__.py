"""The forms a merged 2-D convolution of B models runs in, and the choice between them.

FusedConv (ops/conv.py) runs B models' 2-D convolutions as one. It has three forms:

- "grouped": cuDNN's grouped convolution with B times the groups (FusedConv calls F.conv2d itself);
- "matmul": im2col and one batched matmul over the models (matmul.py), faster than cuDNN on the small
  maps of the late layers, where cuDNN runs the groups one by one;
- "triton": implicit GEMMs in Triton, one launch for all B models a pass (triton/): the stem's, whose
  input needs no gradient and where cuDNN's per-group kernels on 3 channels are slow, and the layers'
  with the input gradient, for channels in multiples of 16.

choice.py's `ConvForms` picks one per shape ("auto": the fastest, timed on a GPU by timing.py's
`fwd_bwd_ms`); sizes.py holds the sizes every form works out alike.
"""

from .choice import CONV_FORMS, ConvForms
from .matmul import conv2d_as_matmul
from .timing import fwd_bwd_ms
from .triton import conv2d_implicit_gemm, layer_form_applies, triton_problem

__all__ = [
    "CONV_FORMS",
    "ConvForms",
    "conv2d_as_matmul",
    "conv2d_implicit_gemm",
    "fwd_bwd_ms",
    "layer_form_applies",
    "triton_problem",
]
