"""Whether a TCP port on this host is free, for the runtime's preflight and stop proofs and doctor's node checks."""

from __future__ import annotations

import socket


def port_free(host: str, port: int) -> bool:
    """True when nothing listens: binding it succeeds (SO_REUSEADDR: TIME_WAIT sockets do not count)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True
