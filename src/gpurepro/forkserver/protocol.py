"""Messages between the fork server and its clients over a Unix socket: length-prefixed JSON, and the
client's file descriptors (its stdin, stdout, stderr and any it was told to pass) sent beside the request
with SCM_RIGHTS, so the forked job writes to the job's own log and pipes, not to the server's."""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

ENV_VAR = "GPUREPRO_FORKSERVER"
# Set in a job the server forked (to the server's pid): its provenance says how it was started.
FORKED_VAR = "GPUREPRO_FORKED_FROM"
# The most descriptors one request carries: stdin, stdout, stderr and a few passed ones.
MAX_FDS = 16
_LENGTH = struct.Struct("!I")


class ProtocolError(Exception):
    """The other end closed the connection or sent something that is not a message."""


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode()
    payload = _LENGTH.pack(len(data)) + data
    if fds:
        socket.send_fds(sock, [payload], fds)
    else:
        sock.sendall(payload)


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(left)
        if not chunk:
            raise ProtocolError("connection closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def receive(sock: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """One message and the descriptors that came with it (new descriptors, owned by the caller)."""
    head, fds, _flags, _addr = socket.recv_fds(sock, _LENGTH.size, MAX_FDS)
    if not head:
        raise ProtocolError("connection closed")
    if len(head) < _LENGTH.size:
        head += _read_exactly(sock, _LENGTH.size - len(head))
    (length,) = _LENGTH.unpack(head)
    try:
        return json.loads(_read_exactly(sock, length)), list(fds)
    except json.JSONDecodeError as err:
        raise ProtocolError(f"not a message: {err}") from None
