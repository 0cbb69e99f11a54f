"""Image data for the training study and the noise workload.

Three sources, one shape of result: a folder in torchvision ImageFolder layout (`train/<class>/...`,
`val/<class>/...`) with a `manifest.json` written last, or synthetic images generated from a seed.

- `specs`: what each real set looks like (classes, image shape, image counts).
- `download`: fetching an archive with pooch, checksum-verified, from an address and its mirrors.
- `extract`: extraction that refuses hostile entries (absolute paths, `..`, links out of the target).
- `staging`: building a dataset beside its final place and publishing it only when complete.
- `tiny_imagenet`, `imagenet`: turning each set's archives into the common layout, with checks.
- `synthetic`: deterministic stand-in data, so every study runs offline.
- `loaders`, `loader_bench`: DataLoaders for the studies and their images/s on their own.
"""
