import sys

from .forkserver.client import gpurepro

sys.exit(gpurepro())
