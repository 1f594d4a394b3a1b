"""Long-lived bulk flows from one sender process and one receiver process,
whatever the number of flows and hosts: `python -m emulator.traffic.flowgen send` or
`receive`, driven line by line over stdin/stdout by emulator/traffic/socket_driver.py.

Why not one iperf3 pair per flow: at FatTree(8) a run started 128 servers and
128 clients (each MPTCP one wrapped in mptcpize) at once, and every client
sent at full speed from its first moment. The connections' handshakes and
the path manager's ~900 joins then queued behind full 100-packet queues (1.2 s
each at 1 Mb/s) and met their retransmission timers. Here the sockets of all
hosts live in two processes (each socket is made inside its host's network
namespace with setns, and stays there), every connection is opened and given
its subflows while the links are still empty, and data starts at one instant
chosen by the harness, for all flows at once.

Protocol (one JSON object per line):

  receive   stdin  {"mptcp": bool, "rcvlowat": bytes, "flows": [{"index", "ns_pid", "ip", "port"}]}
            stdout {"listening": n}
            stdin  {"t0_in": s, "seconds": s}   data starts t0_in after this line
                                                arrives (t0) and stops `seconds` later
            stdin  {"stop": true} (or EOF)      stop waiting for the senders' ends
            stdout {"flows": [per flow: index, accepted, eof, bytes,
                     per_second (bytes in each second since t0), early_bytes,
                     first_data_s, error]}

  send      stdin  {"mptcp": bool, "connect_timeout_s": s, "flows":
                     [{"index", "ns_pid", "src_ip", "client_port", "dst_ip", "server_port"}]}
            stdout {"connected": [index...], "failed": {index: error}}
            stdin  {"go_in": s, "seconds": s, "offsets": {index: s}}
                                                send from t0 = go_in after this line
                                                (+ the flow's offset, if any) until
                                                t0 + s, or until stdin closes
            stdout {"flows": [per flow: index, sent, error]}

Right after connecting, each sender writes HELLO_BYTES: the server's
acknowledgement of that first data is what makes an MPTCP client fully
established, and the kernel opens no subflow before (ENOTCONN). The receiver
counts those bytes as `early_bytes`, not as goodput.

The release is relative (t0 is "so long after this line"): the sender and
receiver may run on other servers than the harness (emulator/spread.py),
whose clocks are not ours. Both lines leave the harness together, so the two
t0s differ by the lines' transit, well under a millisecond on one machine.

Only the standard library and kernel/netlink.py (setns) are used: this runs
as a plain child process of the harness.
"""
from __future__ import annotations

import errno
import json
import os
import select
import selectors
import socket
import struct
import sys
import threading
import time

from kernel.netlink import made_in_netns

IPPROTO_MPTCP = getattr(socket, "IPPROTO_MPTCP", 262)   # 262 in include/uapi/linux/in.h
HELLO_BYTES = 8
CHUNK = 128 * 1024          # bytes per send(), as iperf3's default TCP block
READ_BUFFER = 256 * 1024
THREAD_JOIN_S = 5.0        # how long the writers get to wake from their shutdown


def _say(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class _Control:
    """Commands from the harness on stdin, read with os.read: a buffered
    readline() could hold a second line where select() no longer sees it."""

    def __init__(self) -> None:
        self._partial = b""
        self._commands: list[dict] = []
        self.closed = False

    def fileno(self) -> int:
        return 0

    def read(self) -> None:
        """Read what has arrived (blocks if nothing has)."""
        data = os.read(0, 65536)
        self.closed = not data
        *lines, self._partial = (self._partial + data).split(b"\n")
        self._commands += [json.loads(line) for line in lines if line.strip()]

    def take(self) -> list[dict]:
        taken, self._commands = self._commands, []
        return taken

    def next(self) -> dict:
        """The next command, waiting for it; {} once stdin is closed."""
        while not self._commands and not self.closed:
            self.read()
        return self._commands.pop(0) if self._commands else {}


def _stream_socket(ns_pid: int, mptcp: bool) -> socket.socket:
    proto = IPPROTO_MPTCP if mptcp else socket.IPPROTO_TCP
    sock = made_in_netns(ns_pid, lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto))
    # A port of the previous run may still be in TIME_WAIT.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    return sock


def _abort(sock: socket.socket) -> None:
    """Close with a reset (SO_LINGER 0; MPTCP sends MP_FASTCLOSE): what is
    still queued is dropped, so nothing of this run goes on crossing the
    fabric into the next one."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


# What a receiver's recv() may fail with once the sender has closed with a
# reset at the end: TCP says ECONNRESET; an MPTCP connection closed by
# MP_FASTCLOSE sometimes says ENOTCONN instead (FatTree(6) 4:1, 432 MPTCP-4
# connections at 1 Mb/s: 7 did, each after receiving through the whole run,
# their senders without an error). The sender shuts its sockets down just
# before the reset (_send_until), so a receiver that has read up to that
# FIN is in CLOSE_WAIT when the reset comes, and a reset in CLOSE_WAIT says
# EPIPE (tcp_reset in net/ipv4/tcp_input.c; mptcp_check_fastclose in
# net/mptcp/protocol.c alike): FatTree(8), 1 Mb/s, 1 of 128 MPTCP-8
# receivers, having received until the last second.
RESET_AT_END = (errno.ECONNRESET, errno.ENOTCONN, errno.EPIPE)


def ended_by_reset(now: float, end: float | None, err: int) -> bool:
    """Whether a receive error is the sender's reset at the end of the run."""
    return end is not None and now >= end and err in RESET_AT_END


def _error_text(err: int) -> str:
    return f"{errno.errorcode.get(err, err)}: {os.strerror(err)}"


# --- receiver -------------------------------------------------------------------

class _Inbound:
    """One flow's receiving side: its listener, then its one connection."""

    def __init__(self, index: int):
        self.index = index
        self.listener: socket.socket | None = None
        self.conn: socket.socket | None = None
        self.eof = False
        self.total = 0
        self.early = 0
        self.per_second: list[int] = []
        self.first_data_s: float | None = None
        self.error: str | None = None

    def count(self, nbytes: int, now: float, t0: float | None) -> None:
        self.total += nbytes
        if t0 is None or now < t0:
            self.early += nbytes
            return
        second = int(now - t0)
        if second >= len(self.per_second):
            self.per_second.extend([0] * (second + 1 - len(self.per_second)))
        self.per_second[second] += nbytes
        if self.first_data_s is None:
            self.first_data_s = float(second)

    def result(self) -> dict:
        return {"index": self.index, "accepted": self.conn is not None, "eof": self.eof,
                "bytes": self.total, "early_bytes": self.early, "per_second": self.per_second,
                "first_data_s": self.first_data_s, "error": self.error}


def receive() -> None:
    control = _Control()
    spec = control.next()
    sel = selectors.DefaultSelector()
    flows = []
    for f in spec["flows"]:
        inbound = _Inbound(f["index"])
        listener = _stream_socket(f["ns_pid"], spec["mptcp"])
        listener.bind((f["ip"], f["port"]))
        # One connection is accepted, but the backlog also bounds the SYN
        # queue, where its up to 7 simultaneous MP_JOINs wait.
        listener.listen(64)
        listener.setblocking(False)
        inbound.listener = listener
        sel.register(listener, selectors.EVENT_READ, ("listener", inbound))
        flows.append(inbound)
    sel.register(control, selectors.EVENT_READ, ("control", None))
    _say({"listening": len(flows)})
    buf = bytearray(READ_BUFFER)
    t0 = end = None
    stopping = False
    while not stopping and not all(f.eof or f.error for f in flows):
        for key, _ in sel.select(timeout=1.0):
            kind, inbound = key.data
            now = time.monotonic()
            if kind == "control":
                control.read()
                for command in control.take():
                    if "t0_in" in command:
                        t0 = now + float(command["t0_in"])
                        end = t0 + float(command["seconds"])
                    stopping = stopping or bool(command.get("stop"))
                if control.closed:
                    stopping = True
                    sel.unregister(control)
            elif kind == "listener":
                conn, _ = key.fileobj.accept()
                conn.setblocking(False)
                if spec.get("rcvlowat"):
                    try:
                        conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, spec["rcvlowat"])
                    except OSError:
                        pass        # a kernel whose MPTCP refuses it: woken per segment, as before
                inbound.conn = conn
                # Unregistered but kept open (inbound.listener holds it): the
                # connection's MP_JOIN SYNs arrive at the listener.
                sel.unregister(key.fileobj)
                sel.register(conn, selectors.EVENT_READ, ("conn", inbound))
            else:
                try:
                    n = key.fileobj.recv_into(buf)
                except BlockingIOError:
                    continue
                except OSError as exc:
                    sel.unregister(key.fileobj)
                    if ended_by_reset(now, end, exc.errno or 0):
                        inbound.eof = True
                    else:
                        inbound.error = _error_text(exc.errno or 0)
                    continue
                if n == 0:
                    inbound.eof = True
                    sel.unregister(key.fileobj)
                else:
                    inbound.count(n, now, t0)
    for f in flows:
        if f.conn is not None:
            _abort(f.conn)
        f.listener.close()
    _say({"flows": [f.result() for f in flows]})


# --- sender ---------------------------------------------------------------------

class _Outbound:
    def __init__(self, spec: dict, sock: socket.socket):
        self.index = spec["index"]
        self.sock = sock
        self.connected = False
        self.sent = 0
        self.error: str | None = None


def _connect_all(spec: dict) -> list[_Outbound]:
    """Open every connection at once (non-blocking) and wait for each to
    connect or fail; then write each one's hello."""
    sel = selectors.DefaultSelector()
    flows = []
    for f in spec["flows"]:
        sock = _stream_socket(f["ns_pid"], spec["mptcp"])
        sock.bind((f["src_ip"], f["client_port"]))
        sock.setblocking(False)
        out = _Outbound(f, sock)
        err = sock.connect_ex((f["dst_ip"], f["server_port"]))
        if err in (0, errno.EINPROGRESS):
            sel.register(sock, selectors.EVENT_WRITE, out)
        else:
            out.error = _error_text(err)
        flows.append(out)
    deadline = time.monotonic() + float(spec["connect_timeout_s"])
    while sel.get_map() and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=max(0.0, deadline - time.monotonic())):
            out = key.data
            sel.unregister(out.sock)
            err = out.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                out.error = _error_text(err)
            else:
                out.connected = True
                # The socket buffer is empty: the hello fits at once.
                out.sock.send(bytes(HELLO_BYTES))
    for key in list(sel.get_map().values()):
        key.data.error = f"not connected after {spec['connect_timeout_s']} s"
    sel.close()
    return flows


def send() -> None:
    control = _Control()
    spec = control.next()
    flows = _connect_all(spec)
    _say({"connected": [f.index for f in flows if f.connected],
          "failed": {str(f.index): f.error for f in flows if not f.connected}})
    command = control.next()
    if "go_in" in command:
        t0 = time.monotonic() + float(command["go_in"])
        offsets = {int(i): float(s) for i, s in (command.get("offsets") or {}).items()}
        _send_until(flows, t0, t0 + float(command["seconds"]), offsets, control)
    for f in flows:
        _abort(f.sock)
    _say({"flows": [{"index": f.index, "sent": f.sent, "error": f.error} for f in flows]})


def _send_until(flows: list[_Outbound], t0: float, end: float, offsets: dict[int, float],
                control: _Control) -> None:
    """Keep every connected flow's socket full from t0 + its offset to end,
    or until `control` (stdin) closes: the harness, or its ssh session, is
    gone. One thread per flow, each in a blocking send() as an iperf3 client is.

    Why not one select() loop over non-blocking sockets (this driver's first
    form): its MPTCP connections resent data at the MPTCP level far more.
    FatTree(4), 10 Mb/s, MPTCP-8, 30 s after 5 s, seeds 0-2: 26-45 MPTCP-level
    retransmissions and 505-816 duplicate segments at the receivers per run,
    against 1-17 and 8-265 with these blocking writers (iperf3: 1-4 and
    1-23); docs/notebook.md, "Start-up". The threads only wait in the
    kernel: the GIL is released in send()."""
    chunk = bytes(CHUNK)
    live = [f for f in flows if f.connected and f.error is None]

    def keep_full(flow: _Outbound, start: float) -> None:
        time.sleep(max(0.0, start - time.monotonic()))
        flow.sock.setblocking(True)
        while time.monotonic() < end:
            try:
                flow.sent += flow.sock.send(chunk)
            except OSError as exc:
                if time.monotonic() < end:      # not our own shutdown below
                    flow.error = _error_text(exc.errno or 0)
                return

    start = t0 + max(offsets.values(), default=0.0)
    threads = [threading.Thread(target=keep_full, args=(f, t0 + offsets.get(f.index, 0.0)),
                                name=f"flow {f.index}", daemon=True) for f in live]
    for t in threads:
        t.start()
    # Until the end, the harness's going, or every writer's end (its
    # connection reset: the network it ran in is being removed).
    while not control.closed and (left := end - time.monotonic()) > 0:
        if select.select([control], [], [], min(left, 1.0))[0]:
            control.read()
        elif time.monotonic() > start and not any(t.is_alive() for t in threads):
            break
    # A writer blocked in send() wakes only when its socket changes state:
    # shutdown() does that (the send fails with EPIPE); send() then aborts
    # every socket, so the FIN queued here is never waited for.
    for f in live:
        try:
            f.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    deadline = time.monotonic() + THREAD_JOIN_S     # one wait for all, not one each
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))


if __name__ == "__main__":
    roles = {"send": send, "receive": receive}
    if len(sys.argv) != 2 or sys.argv[1] not in roles:
        sys.exit("usage: python -m emulator.traffic.flowgen send|receive")
    roles[sys.argv[1]]()
