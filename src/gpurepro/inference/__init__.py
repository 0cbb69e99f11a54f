"""The inference study: DeiT-T/S/B (timm) and BERT-B/L (transformers) latency and energy per inference,
in eager, torch.compile and CUDA graph modes, under the shared measurement protocol (harness.py)."""
