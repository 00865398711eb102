"""Diagnostic only (`--engineNodelay 1` of the TypeScript benchmarks): TCP_NODELAY on the engine's sockets.

The engine now creates its listening socket with IPPROTO_TCP itself, so this changes nothing for it; it stays
to compare with an engine (or another ASGI server) that binds with proto 0, which is what this found:

The engine binds its listening socket as `socket.socket(family, SOCK_STREAM)`, whose `proto` is 0, and asyncio
only sets TCP_NODELAY on accepted sockets whose `proto` is IPPROTO_TCP. Its responses then go out under
Nagle's algorithm, and a small write that follows an unacknowledged one waits for the peer's delayed ACK
(about 40 ms on Linux). Put on PYTHONPATH, this module makes TCP stream sockets of the inet families carry
IPPROTO_TCP, so asyncio sets TCP_NODELAY as it intends. It changes nothing else.
"""

import socket

_original_init = socket.socket.__init__


def _init(self, family=-1, type=-1, proto=-1, fileno=None):
    if (
        fileno is None
        and family in (socket.AF_INET, socket.AF_INET6)
        and type == socket.SOCK_STREAM
        and proto in (-1, 0)
    ):
        proto = socket.IPPROTO_TCP
    _original_init(self, family, type, proto, fileno)


socket.socket.__init__ = _init
