"""The "triton" convolution form: a merged 2-D convolution of B models as implicit GEMMs written in
Triton, one kernel launch for all B models a pass.

- implicit_gemm.py: `conv2d_implicit_gemm`, the entry, which takes the layers' kernels or the stem's;
- layers.py (kernels in layer_kernels.py): a convolution inside the network, forward, input and weight
  gradients, for channels in multiples of 16;
- stem.py (kernels in stem_kernels.py): the network's first convolution, on the data (3 channels, no
  input gradient);
- launch.py: the kernels' launches after the first, straight to the compiled binary (little host time);
- availability.py: `triton_problem`, why the form cannot run on a device and dtype, if it cannot.

The kernel modules import Triton; the rest import them only when a kernel is first launched, so the
library loads where Triton is not installed.
"""

from .availability import triton_problem
from .implicit_gemm import conv2d_implicit_gemm
from .layers import layer_form_applies

__all__ = ["conv2d_implicit_gemm", "layer_form_applies", "triton_problem"]
