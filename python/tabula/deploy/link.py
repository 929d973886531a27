"""A byte link to a device: ``write``, a short-polling ``read``, ``close``.

``read(max_bytes)`` waits at most ``poll_s`` and returns ``b''`` when nothing arrived; it raises
``LinkClosed`` once the other end has gone. Callers build their own deadlines on top of it.

Adapters: ``SerialLink`` over any pyserial object (``serial.serial_for_url`` also opens
``socket://host:port`` and ``loop://``), ``SocketLink`` over a TCP connection to an emulator's
UART (QEMU ``-chardev socket``, the FVP's telnet terminal in raw mode) and ``PipeLink`` over a
subprocess's stdin/stdout pipes.

``SocketLink`` exists because pyserial's ``socket://`` discards whatever arrived while it was
opening (``open()`` ends with ``reset_input_buffer()``): an emulator that starts sending the moment
we connect (the boot banner, HELLO) would lose its first bytes.
"""

from __future__ import annotations

import os
import selectors
import socket
import time
from typing import IO, Protocol

POLL_S = 0.05
WRITE_TIMEOUT_S = 10.0


class LinkClosed(EOFError):
    """The other end closed the link (process exited, socket disconnected)."""


class LinkTimeout(TimeoutError):
    """A write could not complete in time (the device stopped reading)."""


class Link(Protocol):
    def write(self, data: bytes) -> None: ...

    def read(self, max_bytes: int) -> bytes: ...

    def close(self) -> None: ...


class SerialLink:
    """A pyserial ``Serial`` (or ``serial_for_url`` object) as a Link."""

    def __init__(self, ser, poll_s: float = POLL_S, write_timeout_s: float = WRITE_TIMEOUT_S):
        import serial  # pyserial; imported here so protocol-only users do not need it

        self._serial_exc = serial.SerialException
        self._write_timeout_exc = serial.SerialTimeoutException
        self.ser = ser
        self.poll_s = poll_s
        self._closed: Exception | None = None  # the error that ended the link, once a read saw it
        ser.timeout = poll_s
        ser.write_timeout = write_timeout_s

    @classmethod
    def open(cls, url: str, baudrate: int = 115200, **kwargs) -> "SerialLink":
        import serial

        return cls(serial.serial_for_url(url, baudrate=baudrate), **kwargs)

    def write(self, data: bytes) -> None:
        try:
            self.ser.write(data)
            self.ser.flush()
        except self._write_timeout_exc as e:
            raise LinkTimeout(f"serial write timed out: {e}") from e
        except (self._serial_exc, OSError) as e:
            raise LinkClosed(f"serial link closed: {e}") from e

    def read(self, max_bytes: int) -> bytes:
        if self._closed is not None:
            raise LinkClosed(f"serial link closed: {self._closed}")
        try:
            first = self.ser.read(1)  # waits up to poll_s
        except (self._serial_exc, OSError) as e:
            raise LinkClosed(f"serial link closed: {e}") from e
        if not first or max_bytes <= 1:
            return first
        # Then take whatever is already there without waiting (socket:// reports in_waiting as 0/1,
        # so a non-blocking read is the portable way).  When the device closes right after its last
        # byte (the EOT), that read fails: return the byte now and report the close on the next call.
        self.ser.timeout = 0
        try:
            return first + self.ser.read(max_bytes - 1)
        except (self._serial_exc, OSError) as e:
            self._closed = e
            return first
        finally:
            try:
                self.ser.timeout = self.poll_s
            except (self._serial_exc, OSError):
                pass

    def close(self) -> None:
        try:
            self.ser.close()
        except Exception:  # closing a dead port must not mask the real error
            pass


class SocketLink:
    """A connected TCP socket as a Link. Data that arrived before the peer closed is returned
    before ``LinkClosed`` is raised."""

    def __init__(self, sock: socket.socket, poll_s: float = POLL_S,
                 write_timeout_s: float = WRITE_TIMEOUT_S):
        self.sock = sock
        self.poll_s = poll_s
        self.write_timeout_s = write_timeout_s
        self._eof = False

    @classmethod
    def connect(cls, host: str, port: int, timeout_s: float = 5.0, **kwargs) -> "SocketLink":
        sock = socket.create_connection((host, port), timeout=timeout_s)
        # frames are short and each waits for its reply: Nagle's algorithm would hold them back
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(sock, **kwargs)

    def write(self, data: bytes) -> None:
        self.sock.settimeout(self.write_timeout_s)
        try:
            self.sock.sendall(data)
        except socket.timeout as e:
            raise LinkTimeout(f"device did not read {len(data)} bytes within {self.write_timeout_s} s") from e
        except OSError as e:
            raise LinkClosed(f"socket to the device closed: {e}") from e

    def read(self, max_bytes: int) -> bytes:
        if self._eof:
            raise LinkClosed("socket from the device closed")
        self.sock.settimeout(self.poll_s)
        try:
            data = self.sock.recv(max_bytes)
        except socket.timeout:
            return b""
        except OSError as e:
            raise LinkClosed(f"socket from the device failed: {e}") from e
        if not data:
            self._eof = True
            raise LinkClosed("socket from the device closed")
        return data

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def _fd(f: IO[bytes] | int) -> int:
    return f if isinstance(f, int) else f.fileno()


class PipeLink:
    """A pair of pipes as a Link: we write to ``to_device`` and read from ``from_device``.

    Accepts file objects (``proc.stdin``, ``proc.stdout``) or raw file descriptors. Reads use
    ``selectors`` + ``os.read`` so they never block longer than ``poll_s``.
    """

    def __init__(self, to_device: IO[bytes] | int, from_device: IO[bytes] | int,
                 poll_s: float = POLL_S, write_timeout_s: float = WRITE_TIMEOUT_S):
        self._to, self._from = to_device, from_device
        self._wfd, self._rfd = _fd(to_device), _fd(from_device)
        self.poll_s = poll_s
        self.write_timeout_s = write_timeout_s
        self._eof = False
        os.set_blocking(self._wfd, False)  # our end only; the device's end is unaffected
        self._rsel = selectors.DefaultSelector()
        self._rsel.register(self._rfd, selectors.EVENT_READ)
        self._wsel = selectors.DefaultSelector()
        self._wsel.register(self._wfd, selectors.EVENT_WRITE)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        deadline = time.monotonic() + self.write_timeout_s
        while view:
            left = deadline - time.monotonic()
            if left <= 0 or not self._wsel.select(left):
                raise LinkTimeout(f"device did not read {len(view)} pending bytes "
                                  f"within {self.write_timeout_s} s")
            try:
                n = os.write(self._wfd, view[:4096])
            except BlockingIOError:
                continue
            except (BrokenPipeError, ConnectionResetError, OSError) as e:
                raise LinkClosed(f"pipe to the device closed: {e}") from e
            view = view[n:]

    def read(self, max_bytes: int) -> bytes:
        if self._eof:
            raise LinkClosed("pipe from the device closed")
        if not self._rsel.select(self.poll_s):
            return b""
        try:
            data = os.read(self._rfd, max_bytes)
        except OSError as e:
            raise LinkClosed(f"pipe from the device failed: {e}") from e
        if not data:
            self._eof = True
            raise LinkClosed("pipe from the device closed")
        return data

    def close(self) -> None:
        for sel in (self._rsel, self._wsel):
            sel.close()
        for f in (self._to, self._from):
            try:
                f.close() if not isinstance(f, int) else os.close(f)
            except OSError:
                pass
