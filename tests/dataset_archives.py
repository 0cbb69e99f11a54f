"""Small archives in the real Tiny-ImageNet and ILSVRC2012 layouts, hostile archives, and a local HTTP
server (127.0.0.1 only) that can drop a connection half-way, for the dataset tests."""

from __future__ import annotations

import hashlib
import io
import socket
import stat
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
from PIL import Image

TINY_CLASSES = ("n01443537", "n01629819", "n01641577")
IMAGENET_CLASSES = ("n01440764", "n01443537", "n01484850")


def jpeg(seed: int, size: int = 64) -> bytes:
    """A small JPEG of random pixels (real JPEG bytes, so PIL and ImageFolder read it as in the real set)."""
    pixels = np.random.default_rng(seed).integers(0, 256, size=(size, size, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="JPEG", quality=80)
    return out.getvalue()


def md5(data: bytes) -> str:
    return f"md5:{hashlib.md5(data).hexdigest()}"


def tiny_imagenet_zip(train_per_class: int = 4, val_per_class: int = 2) -> bytes:
    """tiny-imagenet-200.zip in miniature: wnids.txt, train/<wnid>/images, val/images + annotations, test."""
    out = io.BytesIO()
    top = "tiny-imagenet-200"
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr(f"{top}/", "")
        zf.writestr(f"{top}/wnids.txt", "".join(f"{wnid}\n" for wnid in TINY_CLASSES))
        zf.writestr(f"{top}/words.txt", "".join(f"{wnid}\tthing {wnid}\n" for wnid in TINY_CLASSES))
        annotations = []
        for c, wnid in enumerate(TINY_CLASSES):
            boxes = []
            for i in range(train_per_class):
                zf.writestr(f"{top}/train/{wnid}/images/{wnid}_{i}.JPEG", jpeg(100 * c + i))
                boxes.append(f"{wnid}_{i}.JPEG\t0\t0\t63\t63\n")
            zf.writestr(f"{top}/train/{wnid}/{wnid}_boxes.txt", "".join(boxes))
            for i in range(val_per_class):
                name = f"val_{c * val_per_class + i}.JPEG"
                zf.writestr(f"{top}/val/images/{name}", jpeg(10_000 + 100 * c + i))
                annotations.append(f"{name}\t{wnid}\t0\t0\t63\t63\n")
        zf.writestr(f"{top}/val/val_annotations.txt", "".join(annotations))
        zf.writestr(f"{top}/test/images/test_0.JPEG", jpeg(99_999))
    return out.getvalue()


def hostile_zip(kind: str) -> bytes:
    """A zip in Tiny-ImageNet layout plus one hostile entry: 'absolute', 'dotdot' or 'symlink'."""
    out = io.BytesIO(tiny_imagenet_zip(train_per_class=1, val_per_class=1))
    with zipfile.ZipFile(out, "a") as zf:
        if kind == "absolute":
            zf.writestr(zipfile.ZipInfo("/tmp/gpurepro-evil.txt"), "owned")
        elif kind == "dotdot":
            zf.writestr("tiny-imagenet-200/../../evil.txt", "owned")
        elif kind == "symlink":
            link = zipfile.ZipInfo("tiny-imagenet-200/escape")
            link.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(link, "../../..")
        else:
            raise ValueError(kind)
    return out.getvalue()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def tar_bytes(entries: dict[str, bytes], hostile: str | None = None) -> bytes:
    """An uncompressed tar of these files, plus one hostile entry when asked:
    'absolute', 'dotdot', 'symlink' (a link to outside), 'abs-symlink', 'hardlink' (to /etc/passwd)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in entries.items():
            _add(tar, name, data)
        if hostile == "absolute":
            _add(tar, "/tmp/gpurepro-evil.txt", b"owned")
        elif hostile == "dotdot":
            _add(tar, "../evil.txt", b"owned")
        elif hostile in ("symlink", "abs-symlink", "hardlink"):
            link = tarfile.TarInfo("escape")
            link.type = tarfile.LNKTYPE if hostile == "hardlink" else tarfile.SYMTYPE
            link.linkname = {"symlink": "../../outside", "abs-symlink": "/etc", "hardlink": "/etc/passwd"}[
                hostile
            ]
            tar.addfile(link)
        elif hostile is not None:
            raise ValueError(hostile)
    return out.getvalue()


@dataclass
class ImageNetFiles:
    train_tar: Path
    val_tar: Path
    val_labels: Path


def imagenet_archives(
    folder: Path,
    train_per_class: int = 3,
    val_per_class: int = 2,
    hostile_inner: str | None = None,
    hostile_outer: str | None = None,
    hostile_val: str | None = None,
) -> ImageNetFiles:
    """ILSVRC2012 in miniature: a train tar of per-class tars, a flat val tar and a labels text file."""
    folder.mkdir(parents=True, exist_ok=True)
    inner = {}
    for c, wnid in enumerate(IMAGENET_CLASSES):
        images = {f"{wnid}_{i}.JPEG": jpeg(100 * c + i, size=48) for i in range(train_per_class)}
        inner[f"{wnid}.tar"] = tar_bytes(images, hostile_inner if c == 1 else None)
    val, labels = {}, []
    for n in range(val_per_class * len(IMAGENET_CLASSES)):
        name = f"ILSVRC2012_val_{n + 1:08d}.JPEG"
        val[name] = jpeg(50_000 + n, size=48)
        labels.append(f"{name} {IMAGENET_CLASSES[n % len(IMAGENET_CLASSES)]}\n")
    files = ImageNetFiles(folder / "train.tar", folder / "val.tar", folder / "val_labels.txt")
    files.train_tar.write_bytes(tar_bytes(inner, hostile_outer))
    files.val_tar.write_bytes(tar_bytes(val, hostile_val))
    files.val_labels.write_text("".join(labels))
    return files


@dataclass
class FileServer:
    """Serves `files` at http://127.0.0.1:<port>/<name>. Per file, `behaviour` may be 'drop' (send half,
    then close the connection) or 'drop-once' (drop only the first request); `requests` counts requests."""

    files: dict[str, bytes]
    behaviour: dict[str, str] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)
    port: int = 0

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"


@contextmanager
def serve(files: dict[str, bytes], behaviour: dict[str, str] | None = None) -> Iterator[FileServer]:
    state = FileServer(files, behaviour or {})

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            name = self.path.lstrip("/")
            count = state.requests[name] = state.requests.get(name, 0) + 1
            data = state.files.get(name)
            if data is None:
                self.send_error(404)
                return
            how = state.behaviour.get(name, "ok")
            drop = how == "drop" or (how == "drop-once" and count == 1)
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if drop:
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
