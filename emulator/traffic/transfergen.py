"""Transfers of a given size, many of them, from one process:
`python -m emulator.traffic.transfergen`, driven over stdin/stdout by
emulator/traffic/transfers.py.

Each transfer opens its own connection at its start time, writes an 8-byte
header (its index and size) and then its bytes; the receiving side, once it
has them all, writes one byte back, and both ends close with a reset. Every
socket of every host lives in this one process (made inside its host's
namespace with setns, as flowgen's are), so a transfer costs a connection,
not a process: iperf3 per transfer would start about 50 processes a second
for the paper's short flows (Fig. 12) at FatTree(4).

Why both ends in one process: the two cores this harness targets are better
spent on the fabric than on a process per host, and one event loop sees
every start and completion on one clock (CLOCK_MONOTONIC, shared with the
harness; no time namespaces are used).

Protocol (one JSON object per line):

  stdin  {"mptcp": bool, "cc": name or null, "servers": [{"ns_pid", "ip", "port"}],
          "transfers": [{"index", "ns_pid", "src_ip", "client_port", "dst_ip",
                         "server_port", "at_s", "bytes", "after"}], "timeout_s": s,
          "stop_s": s or null, "sample_s": s or null}
  stdout {"listening": n}
  stdin  {"t0": monotonic}                transfer i starts at t0 + at_s
  stdout {"transfers": [per transfer: index, start_s, connected_s,
          first_byte_s, last_byte_s, acked_s, received, subflows, error],
          "received_samples": [[t, bytes], ...],
          "cpu_s": this process's CPU time, user and system}
          (times in seconds since t0; None where it did not happen)

Closed loop: a transfer whose "after" names another starts when that one
ends (completed or failed), not before its own at_s. At "stop_s" the run
ends: transfers still running are ended with error STOPPED, and the chained
ones not yet started never start (every time None, no error).
"received_samples": every "sample_s" seconds (at the first event after the
mark, within SELECT_WAIT_S), the bytes every receiving side had until then,
so a caller can count what arrived in a window while transfers are still
running.

`last_byte_s` is when the receiving side had every byte, `acked_s` when the
sender read the receiver's one-byte answer. `subflows` is the sender's
MPTCP_INFO count of subflows (the initial one, and joins still in progress) when the answer
arrived, 1 for TCP. The transfers still running `timeout_s` after t0 plus
their start are ended with error "timed out".

Only the standard library and kernel/netlink.py (setns) are used.
"""
from __future__ import annotations

import bisect
import errno
import resource
import selectors
import socket
import struct
import time

from emulator.traffic.flowgen import _Control, _abort, _error_text, _say, _stream_socket

HEADER = struct.Struct("!II")         # index, size in bytes
SOL_MPTCP, MPTCP_INFO = 284, 1        # include/uapi/linux/mptcp.h; the first byte is mptcpi_subflows
CHUNK = 64 * 1024
EXPIRY_SCAN_S = 0.5
STOPPED = "running at stop_s"
SELECT_WAIT_S = 0.2
ZEROS = bytes(CHUNK)


class _Transfer:
    """One transfer, both of its ends."""

    def __init__(self, spec: dict):
        self.spec = spec
        self.index, self.size = spec["index"], spec["bytes"]
        self.client: socket.socket | None = None
        self.server: socket.socket | None = None
        self.to_send = HEADER.size + self.size
        self.received = 0
        self.header = b""
        self.times: dict[str, float | None] = dict.fromkeys(
            ("start_s", "connected_s", "first_byte_s", "last_byte_s", "acked_s"))
        self.subflows: int | None = None
        self.error: str | None = None
        self.done = False

    def result(self) -> dict:
        return {"index": self.index, **self.times, "received": self.received,
                "subflows": self.subflows, "error": self.error}


class TransferLoop:
    def __init__(self, setup: dict):
        self.mptcp = bool(setup["mptcp"])
        self.timeout_s = float(setup.get("timeout_s", 60.0))
        self.cc = setup.get("cc")
        self.sel = selectors.DefaultSelector()
        self.listeners = []
        for s in setup["servers"]:
            sock = _stream_socket(s["ns_pid"], self.mptcp)
            sock.bind((s["ip"], s["port"]))
            sock.listen(1024)
            sock.setblocking(False)
            self.sel.register(sock, selectors.EVENT_READ, ("listen", None))
            self.listeners.append(sock)
        transfers = [_Transfer(t) for t in setup["transfers"]]
        self.all = {t.index: t for t in transfers}
        self.unfinished = len(self.all)
        # Transfers started by the clock; the chained ones wait for the end
        # of the one they follow (closed loop), then for their own at_s.
        self.pending = sorted((t for t in transfers if t.spec.get("after") is None),
                              key=lambda t: t.spec["at_s"])
        self.followers: dict[int, list[_Transfer]] = {}
        for t in transfers:
            if t.spec.get("after") is not None:
                self.followers.setdefault(t.spec["after"], []).append(t)
        self.stop_s = setup.get("stop_s")
        self.stopped = False
        self.sample_s = setup.get("sample_s")
        self.received_total = 0
        self.samples: list[list[float]] = []
        self.unclaimed: dict[socket.socket, bytes] = {}   # accepted, header not complete
        self.t0 = 0.0

    def now(self) -> float:
        return time.monotonic() - self.t0

    def run(self, t0: float) -> list[dict]:
        self.t0 = t0
        next_expiry = 0.0
        next_sample = 0.0 if self.sample_s else None
        while self.unfinished:
            wait = SELECT_WAIT_S
            if self.pending:
                wait = min(wait, max(0.0, self.pending[0].spec["at_s"] - self.now()))
            for key, events in self.sel.select(wait):
                kind, transfer = key.data
                getattr(self, f"_on_{kind}")(key.fileobj, transfer, events)
            while self.pending and self.pending[0].spec["at_s"] <= self.now():
                self._start(self.pending.pop(0))
            if next_sample is not None and self.now() >= next_sample:
                self.samples.append([round(self.now(), 4), self.received_total])
                next_sample += self.sample_s
            if self.stop_s is not None and self.now() >= self.stop_s and not self.stopped:
                self._stop()
            # Timeouts are tens of seconds: the scan over every transfer runs
            # twice a second, not on every event.
            if self.now() >= next_expiry:
                self._expire()
                next_expiry = self.now() + EXPIRY_SCAN_S
        for sock in self.listeners + list(self.unclaimed):
            sock.close()
        return [t.result() for t in sorted(self.all.values(), key=lambda t: t.index)]

    def sample_record(self) -> list[list[float]]:
        """The received-byte samples, with one at the end of the run."""
        return self.samples + ([[round(self.now(), 4), self.received_total]] if self.sample_s else [])

    # -- the sending side --

    def _start(self, t: _Transfer) -> None:
        t.times["start_s"] = self.now()
        try:
            t.client = sock = _stream_socket(t.spec["ns_pid"], self.mptcp)
            _no_delay(sock)
            if self.cc:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, self.cc.encode())
            sock.bind((t.spec["src_ip"], t.spec["client_port"]))
            sock.setblocking(False)
            err = sock.connect_ex((t.spec["dst_ip"], t.spec["server_port"]))
        except OSError as exc:
            self._fail(t, f"connect: {exc}")
            return
        if err not in (0, errno.EINPROGRESS):
            self._fail(t, f"connect: {_error_text(err)}")
            return
        self.sel.register(sock, selectors.EVENT_WRITE, ("client", t))

    def _on_client(self, sock: socket.socket, t: _Transfer, events: int) -> None:
        if t.times["connected_s"] is None:
            err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self._fail(t, f"connect: {_error_text(err)}")
                return
            t.times["connected_s"] = self.now()
        if events & selectors.EVENT_WRITE and t.to_send:
            self._send(sock, t)
        if events & selectors.EVENT_READ:
            answer = self._attempt(t, "recv", lambda: sock.recv(16))
            if answer is None:
                return
            if not answer:
                self._fail(t, "the receiver closed before it answered")
                return
            t.times["acked_s"] = self.now()
            t.subflows = self._subflows(sock)
            self._finish(t)

    def _send(self, sock: socket.socket, t: _Transfer) -> None:
        while t.to_send:
            sent_so_far = HEADER.size + t.size - t.to_send
            if sent_so_far < HEADER.size:
                # The header and the first bytes in one write: a header
                # segment alone would hold the rest back (Nagle) until it is
                # acknowledged.
                first = HEADER.pack(t.index, t.size) + ZEROS[:min(CHUNK, t.size)]
                data = memoryview(first)[sent_so_far:]
            else:
                data = memoryview(ZEROS)[:min(CHUNK, t.to_send)]
            n = self._attempt(t, "send", lambda: sock.send(data))
            if n is None:
                return
            t.to_send -= n
        self.sel.modify(sock, selectors.EVENT_READ, ("client", t))

    def _subflows(self, sock: socket.socket) -> int:
        if not self.mptcp:
            return 1
        try:
            return 1 + sock.getsockopt(SOL_MPTCP, MPTCP_INFO, 64)[0]
        except OSError:
            return 0    # the kernel gave no MPTCP_INFO (a fallback to TCP): unknown

    # -- the receiving side --

    def _on_listen(self, sock: socket.socket, _t, _events: int) -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except BlockingIOError:
                return
            conn.setblocking(False)
            _no_delay(conn)
            self.unclaimed[conn] = b""
            self.sel.register(conn, selectors.EVENT_READ, ("unclaimed", None))

    def _on_unclaimed(self, conn: socket.socket, _t, _events: int) -> None:
        """Read the header that names the transfer this connection carries."""
        try:
            data = conn.recv(HEADER.size - len(self.unclaimed[conn]))
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.sel.unregister(conn)
            del self.unclaimed[conn]
            _abort(conn)
            return
        header = self.unclaimed[conn] + data
        if len(header) < HEADER.size:
            self.unclaimed[conn] = header
            return
        del self.unclaimed[conn]
        index, _size = HEADER.unpack(header)
        t = self.all.get(index)
        if t is None or t.done:
            self.sel.unregister(conn)
            _abort(conn)
            return
        t.server = conn
        t.times["first_byte_s"] = self.now()
        self.sel.modify(conn, selectors.EVENT_READ, ("server", t))
        if t.size == 0:
            self._answer(conn, t)

    def _on_server(self, conn: socket.socket, t: _Transfer, _events: int) -> None:
        data = self._attempt(t, "receive", lambda: conn.recv(CHUNK))
        if data is None:
            return
        if not data:
            if t.times["last_byte_s"] is None:
                self._fail(t, f"the sender closed after {t.received} of {t.size} bytes")
            return
        t.received += len(data)
        self.received_total += len(data)
        if t.received >= t.size and t.times["last_byte_s"] is None:
            self._answer(conn, t)

    def _answer(self, conn: socket.socket, t: _Transfer) -> None:
        t.times["last_byte_s"] = self.now()
        try:
            conn.send(b"!")
        except OSError as exc:
            self._fail(t, f"answer: {exc}")

    # -- ends --

    def _attempt(self, t: _Transfer, what: str, call):
        """call()'s result; None if it would block, or if it failed (the
        transfer is then ended with the error)."""
        try:
            return call()
        except BlockingIOError:
            return None
        except OSError as exc:
            self._fail(t, f"{what}: {exc}")
            return None

    def _expire(self) -> None:
        now = self.now()
        for t in self.all.values():
            if not t.done and t.times["start_s"] is not None and now - t.times["start_s"] > self.timeout_s:
                self._fail(t, "timed out")

    def _fail(self, t: _Transfer, error: str) -> None:
        t.error = t.error or error
        self._finish(t)

    def _finish(self, t: _Transfer) -> None:
        for sock in (t.client, t.server):
            if sock is not None:
                try:
                    self.sel.unregister(sock)
                except (KeyError, ValueError):
                    pass
                _abort(sock)
        t.client = t.server = None
        if not t.done:
            t.done = True
            self.unfinished -= 1
            self._follow(t)

    def _stop(self) -> None:
        """End the run at stop_s: the transfers not started yet never start,
        the running ones end with STOPPED, and (through _follow) the ones
        chained after them end unstarted."""
        self.stopped = True
        for t in self.pending:
            self._finish(t)                 # not started: no times, no error
        self.pending = []
        for t in list(self.all.values()):
            if not t.done and t.times["start_s"] is not None:
                self._fail(t, STOPPED)

    def _follow(self, t: _Transfer) -> None:
        """Release the transfers chained after t: by their at_s, or not at
        all once stop_s has passed (and then theirs neither)."""
        for nxt in self.followers.pop(t.index, []):
            if self.stop_s is not None and self.now() >= self.stop_s:
                self._finish(nxt)           # not started: no times, no error
            else:
                bisect.insort(self.pending, nxt, key=lambda u: u.spec["at_s"])


def _no_delay(sock: socket.socket) -> None:
    """TCP_NODELAY: a transfer's last partial segment and the one-byte answer
    leave at once, not after the peer's delayed acknowledgement (tens of ms);
    what is measured is the transfer, not Nagle's algorithm."""
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass


def main() -> None:
    control = _Control()
    loop = TransferLoop(control.next())
    _say({"listening": len(loop.listeners)})
    start = control.next()
    if "t0" not in start:
        return
    time.sleep(max(0.0, start["t0"] - time.monotonic()))
    results = loop.run(start["t0"])
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _say({"transfers": results, "received_samples": loop.sample_record(),
          "cpu_s": round(usage.ru_utime + usage.ru_stime, 4)})


if __name__ == "__main__":
    main()
