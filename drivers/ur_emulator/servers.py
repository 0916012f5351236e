"""The network side of the emulator: dashboard (29999), script (30001-30003) and RTDE (30004)
servers on one address, one thread per connection (RTDE: a reader and a sender).

Robustness: every socket has a timeout; a package whose header promises more than arrives within
``READ_TIMEOUT`` closes that connection; a size below the header's closes it (the stream cannot
be re-framed); an unknown package type, a data package for an unknown recipe or of the wrong
size, and a request with a malformed payload are answered (a text message, or the request's
failure reply) and the connection goes on. A dashboard line or a script longer than the limits
closes the connection. Nothing a client sends reaches the controller unchecked.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading
from collections.abc import Callable

import orbitree.drivers.ur_emulator.dashboard as dashboard
import orbitree.drivers.ur_emulator.protocol as protocol

from .controller import URController
from .rtde_script import ControlScript, is_control_script, register_offset

_log = logging.getLogger(__name__)

DASHBOARD_PORT = 29999
SCRIPT_PORTS = (30001, 30002, 30003)
RTDE_PORT = 30004
POLL = 0.1  # s: how often blocked threads look at the stop flag
READ_TIMEOUT = 2.0  # s: the rest of a started package must arrive within this
SEND_TIMEOUT = 1.0  # s: a client that does not read its data for this long is dropped
MAX_LINE = 4096
MAX_SCRIPT = 1 << 20
MAX_FREQUENCY = 500.0


class _Closed(Exception):
    pass


class _Connection:
    def __init__(self, sock: socket.socket, server: Servers) -> None:
        self.sock = sock
        self.server = server
        self.send_lock = threading.Lock()
        self.alive = True

    def send(self, data: bytes) -> None:
        with self.send_lock:
            view, waited = memoryview(data), 0.0
            while view:
                if not self.alive:
                    raise _Closed
                try:
                    view = view[self.sock.send(view):]
                except TimeoutError:
                    waited += POLL
                    if waited >= SEND_TIMEOUT:
                        self.close()
                        raise _Closed from None
                except OSError as exc:
                    self.close()
                    raise _Closed from exc

    def recv_exact(self, count: int, started: bool) -> bytes:
        """``count`` bytes; waits while the server runs, or READ_TIMEOUT once a package began."""
        data = bytearray()
        waited = 0.0
        while len(data) < count:
            if not self.alive or not self.server.running:
                raise _Closed
            try:
                chunk = self.sock.recv(count - len(data))
            except TimeoutError:
                if started or data:
                    waited += POLL
                    if waited >= READ_TIMEOUT:
                        raise _Closed from None
                continue
            except OSError as exc:
                raise _Closed from exc
            if not chunk:
                raise _Closed
            data += chunk
        return bytes(data)

    def close(self) -> None:
        self.alive = False
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()


class _RtdeConnection(_Connection):
    def __init__(self, sock: socket.socket, server: Servers) -> None:
        super().__init__(sock, server)
        self.version: int | None = None
        self.outputs: list[protocol.Recipe] = []
        self.inputs: dict[int, protocol.Recipe] = {}
        self.started = False

    def text(self, message: str, level: int = protocol.ERROR) -> None:
        self.send(protocol.text_message(message, level, "ur emulator"))

    def serve(self) -> None:
        sender = threading.Thread(target=self._send_data, name="ur-emulator-rtde-send", daemon=True)
        sender.start()
        try:
            while True:
                size, kind = protocol.HEADER.unpack(self.recv_exact(protocol.HEADER_SIZE, started=False))
                if size < protocol.HEADER_SIZE:
                    self.text(f"package size {size} is below the header's {protocol.HEADER_SIZE} bytes; "
                              "closing the connection", protocol.EXCEPTION)
                    return
                payload = self.recv_exact(size - protocol.HEADER_SIZE, started=True)
                self._handle(kind, payload)
        except _Closed:
            pass
        finally:
            self.close()
            sender.join(timeout=1.0)

    def _handle(self, kind: int, payload: bytes) -> None:
        ctl = self.server.controller
        if kind == protocol.REQUEST_PROTOCOL_VERSION:
            accepted = len(payload) == 2 and struct.unpack(">H", payload)[0] == protocol.PROTOCOL_VERSION
            if accepted:
                self.version = protocol.PROTOCOL_VERSION
            self.send(protocol.package(kind, bytes([accepted])))
        elif kind == protocol.GET_URCONTROL_VERSION:
            self.send(protocol.package(kind, struct.pack(">IIII", *ctl.version)))
        elif kind == protocol.SETUP_OUTPUTS:
            self.send(protocol.package(kind, self._setup_outputs(payload)))
        elif kind == protocol.SETUP_INPUTS:
            if self.started or len(self.inputs) >= 255:
                reply = bytes([0])
            else:
                reply, recipe = protocol.setup_reply(len(self.inputs) + 1, protocol.parse_names(payload),
                                                     protocol.INPUTS)
                if recipe is not None:
                    self.inputs[recipe.id] = recipe
            self.send(protocol.package(kind, reply))
        elif kind == protocol.START:
            self.started = bool(self.outputs or self.inputs) and self.version is not None
            self.send(protocol.package(kind, bytes([self.started])))
        elif kind == protocol.PAUSE:
            self.started = False
            self.send(protocol.package(kind, bytes([1])))
        elif kind == protocol.DATA_PACKAGE:
            self._data(payload)
        elif kind == protocol.TEXT_MESSAGE:
            ctl.log(f"RTDE client says: {payload[1:].decode('utf-8', 'replace')!r}")
        else:
            self.text(f"unknown package type {kind}")

    def _setup_outputs(self, payload: bytes) -> bytes:
        if self.started or len(payload) < 8 or self.version is None:
            return bytes([0])
        (frequency,) = struct.unpack(">d", payload[:8])
        names = protocol.parse_names(payload[8:])
        if not 0.0 < frequency <= MAX_FREQUENCY or len(self.outputs) >= 255:
            return bytes([0]) + ",".join("NOT_FOUND" for _ in names).encode("ascii")
        reply, recipe = protocol.setup_reply(len(self.outputs) + 1, names, protocol.OUTPUTS)
        if recipe is not None:
            self.outputs.append(protocol.Recipe(recipe.id, recipe.names, recipe.types, frequency))
        return reply

    def _data(self, payload: bytes) -> None:
        if not payload:
            self.text("data package without a recipe id")
            return
        recipe = self.inputs.get(payload[0])
        if recipe is None:
            self.text(f"data package for unknown input recipe {payload[0]}")
            return
        if not self.started:
            self.text("data package before start")
            return
        try:
            values = recipe.unpack(payload[1:])
        except protocol.ProtocolError as error:
            self.text(str(error))
            return
        self.server.controller.write_inputs(values)

    def _send_data(self) -> None:
        ctl = self.server.controller
        last_sent: dict[int, int] = {}
        seen = -1
        try:
            while self.alive and self.server.running:
                with ctl.lock:
                    if ctl.cycles == seen:
                        ctl.cycle_event.wait(timeout=POLL)
                    cycle = ctl.cycles
                if cycle == seen or not self.started:
                    seen = cycle
                    continue
                seen = cycle
                for recipe in list(self.outputs):
                    every = max(1, round(MAX_FREQUENCY / recipe.frequency))
                    if cycle // every != last_sent.get(recipe.id, -1):
                        last_sent[recipe.id] = cycle // every
                        self.send(protocol.package(protocol.DATA_PACKAGE,
                                                   recipe.pack(ctl.outputs(recipe.names))))
        except _Closed:
            pass


class _DashboardConnection(_Connection):
    def serve(self) -> None:
        try:
            self.send((dashboard.WELCOME + "\n").encode())
            buffer = b""
            while True:
                if b"\n" not in buffer:
                    if len(buffer) > MAX_LINE:
                        self.send(b"line too long; closing\n")
                        return
                    buffer += self.recv_some()
                    continue
                line, buffer = buffer.split(b"\n", 1)
                text = line.decode("utf-8", "replace").rstrip("\r")
                self.send((dashboard.answer(self.server.controller, text) + "\n").encode())
                if text.strip().lower() == "quit":
                    return
        except _Closed:
            pass
        finally:
            self.close()

    def recv_some(self) -> bytes:
        while True:
            if not self.alive or not self.server.running:
                raise _Closed
            try:
                chunk = self.sock.recv(4096)
            except TimeoutError:
                continue
            except OSError as exc:
                raise _Closed from exc
            if not chunk:
                raise _Closed
            return chunk


class _ScriptConnection(_DashboardConnection):
    """URScript in, nothing out: each complete program (``def``/``sec`` ... ``end``) replaces the
    running one; ur_rtde's control script runs as :class:`ControlScript`, others are logged and
    not run. Scripts from the network are ignored in local control mode."""

    def serve(self) -> None:
        try:
            text = ""
            while True:
                text += self.recv_some().decode("utf-8", "replace")
                if len(text) > MAX_SCRIPT:
                    self.server.controller.log("script too long; connection closed")
                    return
                text = self._programs(text)
        except _Closed:
            pass
        finally:
            self.close()

    def _programs(self, text: str) -> str:
        """Run the complete programs in ``text``; return what is left (an incomplete one)."""
        ctl = self.server.controller
        while True:
            lines = text.split("\n")
            start = next((i for i, ln in enumerate(lines) if ln.startswith(("def ", "sec "))), None)
            if start is None:
                complete = lines[:-1]
                for line in complete:
                    if line.strip():
                        ctl.log(f"script line not emulated: {line.strip()[:80]!r}")
                return lines[-1]
            end = next((i for i in range(start + 1, len(lines) - 1) if lines[i].rstrip() == "end"), None)
            if end is None:
                return "\n".join(lines[start:])
            program = "\n".join(lines[start:end + 1])
            text = "\n".join(lines[end + 1:])
            if not ctl.remote_control:
                ctl.log("program from the network ignored: the robot is in local control")
            elif is_control_script(program):
                ctl.run_program(ControlScript(ctl, register_offset(program)))
            else:
                ctl.end_program("replaced by a program the emulator does not run")
                ctl.log(f"program not emulated: {lines[start].strip()[:80]!r}")


class Servers:
    """Listening sockets on ``host`` and the connections' threads."""

    def __init__(self, controller: URController, host: str, sockets: dict[int, socket.socket]) -> None:
        self.controller = controller
        self.host = host
        self.running = True
        self._listeners = sockets
        self._connections: set[_Connection] = set()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        kinds: dict[int, Callable[[socket.socket, Servers], _Connection]] = {
            DASHBOARD_PORT: _DashboardConnection, RTDE_PORT: _RtdeConnection,
            **dict.fromkeys(SCRIPT_PORTS, _ScriptConnection)}
        for port, listener in sockets.items():
            thread = threading.Thread(target=self._accept, args=(listener, kinds[port]),
                                      name=f"ur-emulator-{port}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _accept(self, listener: socket.socket, kind: Callable[[socket.socket, Servers], _Connection]) -> None:
        listener.settimeout(POLL)
        while self.running:
            try:
                sock, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            sock.settimeout(POLL)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connection = kind(sock, self)
            with self._lock:
                self._connections.add(connection)
            thread = threading.Thread(target=self._serve, args=(connection,), name="ur-emulator-conn", daemon=True)
            thread.start()
            with self._lock:
                self._threads = [t for t in self._threads if t.is_alive()]
                self._threads.append(thread)

    def _serve(self, connection: _Connection) -> None:
        try:
            connection.serve()  # type: ignore[attr-defined]
        except Exception:  # a bug must cost one connection, not the emulator
            _log.exception("ur emulator: connection failed")
        finally:
            connection.close()
            with self._lock:
                self._connections.discard(connection)

    def drop_connections(self) -> int:
        """Close every client connection (the listeners stay): a network cut. Returns how many."""
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            connection.close()
        return len(connections)

    def close(self) -> None:
        self.running = False
        for listener in self._listeners.values():
            with contextlib.suppress(OSError):
                listener.close()
        self.drop_connections()
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout=2.0)


def bind(host: str) -> dict[int, socket.socket]:
    """Listening sockets on the UR ports of ``host``; OSError (all released) if one is taken."""
    sockets: dict[int, socket.socket] = {}
    try:
        for port in (DASHBOARD_PORT, *SCRIPT_PORTS, RTDE_PORT):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets[port] = sock
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(8)
    except OSError:
        for sock in sockets.values():
            sock.close()
        raise
    return sockets
