"""What crosses one interface of a node, from the packets themselves: per
second, the bytes sent and received there, and each TCP connection's payload
bytes (by its addresses and ports). The link-failure experiment (Fig. 19)
taps the degraded link with it, to say which flows and subflows crossed it
and at what rate the link ran in each direction.

Only TCP is counted (every flow of the harness is TCP); bytes are IP
lengths, without the Ethernet header.

An AF_PACKET socket made in the node's namespace, read by a thread during a
window of seconds only: every packet read costs the harness's own process
a system call and a parse, so the tap is open around the event it watches,
not for the whole run. Parsed by hand, in the harness's own process (tcpdump
runs only for `--pcap`): Ethernet, IPv4 and the TCP header's ports and length."""
from __future__ import annotations

import math
import socket
import struct
import threading
import time
from collections import defaultdict

from kernel.netlink import made_in_netns

ETH_P_ALL = 0x0003
ETH_P_IP = b"\x08\x00"
IPPROTO_TCP = 6
# Enough of a frame for Ethernet (14), IPv4 with options (up to 60) and the
# TCP header's first 14 bytes (ports and data offset).
SNAP_BYTES = 96
READ_TIMEOUT_S = 0.2
MAX_ERRORS_KEPT = 5
SO_TIMESTAMPNS = 35        # linux/asm-generic/socket.h; Python's socket module lacks it


def parse_tcp(frame: bytes) -> tuple[str, int, str, int, int, int] | None:
    """(source ip, source port, destination ip, destination port, IP bytes,
    TCP payload bytes) of an IPv4 TCP frame; None for anything else."""
    if len(frame) < 34 or frame[12:14] != ETH_P_IP or frame[23] != IPPROTO_TCP:
        return None
    ihl = (frame[14] & 0x0F) * 4
    if len(frame) < 14 + ihl + 14:
        return None
    total = struct.unpack_from("!H", frame, 16)[0]
    sport, dport = struct.unpack_from("!HH", frame, 14 + ihl)
    payload = total - ihl - (frame[14 + ihl + 12] >> 4) * 4
    return (socket.inet_ntoa(frame[26:30]), sport, socket.inet_ntoa(frame[30:34]), dport,
            total, max(0, payload))


class LinkTap:
    """Counts what crosses `iface` (in the namespace of `ns_pid`) from
    `window[0]` to `window[1]` seconds after start(). Directions are the
    node's: "out" is what it sent on the interface (after its queue, so the
    link's real rate), "in" what it received."""

    def __init__(self, ns_pid: int, iface: str, window: tuple[float, float]):
        self.ns_pid = ns_pid
        self.iface = iface
        self.window = window
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._reset()

    def _reset(self) -> None:
        self.packets = 0
        self.errors: list[str] = []
        self.ip_bytes: dict[str, dict[int, int]] = {"out": defaultdict(int), "in": defaultdict(int)}
        self.payload: dict[tuple, dict[int, int]] = defaultdict(lambda: defaultdict(int))
        self.opened_s: float | None = None

    def start(self) -> None:
        self._reset()
        self._stop.clear()
        self._t0 = time.monotonic()
        # Packets are binned by the kernel's receive timestamp (wall clock),
        # not by when this thread got to read them: the harness's other
        # threads hold the GIL now and then, and reads come late in bursts.
        self._t0_wall = time.time()
        self._thread = threading.Thread(target=self._run, name=f"tap {self.iface}", daemon=True)
        self._thread.start()

    def _open(self) -> socket.socket:
        def make() -> socket.socket:
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW | socket.SOCK_CLOEXEC,
                                 socket.htons(ETH_P_ALL))
            sock.bind((self.iface, 0))
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            return sock
        sock = made_in_netns(self.ns_pid, make)
        sock.settimeout(READ_TIMEOUT_S)
        return sock

    def _run(self) -> None:
        if self._stop.wait(max(0.0, self.window[0] - (time.monotonic() - self._t0))):
            return
        try:
            sock = self._open()
        except OSError as exc:
            self.errors.append(f"open {self.iface}: {exc}")
            return
        self.opened_s = round(time.monotonic() - self._t0, 2)
        try:
            while not self._stop.is_set():
                now = time.monotonic() - self._t0
                if now >= self.window[1]:
                    break
                try:
                    frame, ancillary, _, addr = sock.recvmsg(SNAP_BYTES, 64)
                except socket.timeout:
                    continue
                except OSError as exc:
                    if len(self.errors) < MAX_ERRORS_KEPT:
                        self.errors.append(f"read {self.iface}: {exc}")
                    continue
                self._count(frame, addr[2] == socket.PACKET_OUTGOING,
                            int(self._since_start(ancillary, now)))
        finally:
            sock.close()

    def _since_start(self, ancillary, read_at: float) -> float:
        """Seconds since start() at which the kernel saw the packet (its
        SO_TIMESTAMPNS), or when it was read if there is no stamp."""
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
                sec, nsec = struct.unpack("qq", data[:16])
                return sec + nsec / 1e9 - self._t0_wall
        return read_at

    def _count(self, frame: bytes, outgoing: bool, second: int) -> None:
        tcp = parse_tcp(frame)
        if tcp is None:
            return
        src, sport, dst, dport, ip_bytes, payload = tcp
        self.packets += 1
        self.ip_bytes["out" if outgoing else "in"][second] += ip_bytes
        if payload:
            self.payload[(src, sport, dst, dport)][second] += payload

    def stop(self) -> dict:
        """Close the tap and say what it counted: per-second Mb/s from the
        window's first whole second, per direction and per connection."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            if self._thread.is_alive():
                self.errors.append("the tap's reader did not stop within 5 s")
        first, last = math.ceil(self.window[0]), math.floor(self.window[1])   # whole seconds
        seconds = range(first, last)

        def series(counts: dict[int, int]) -> list[float]:
            return [round(counts.get(s, 0) * 8 / 1e6, 4) for s in seconds]
        return {
            "iface": self.iface, "first_s": first, "window_s": list(self.window),
            "opened_s": self.opened_s, "packets": self.packets, "errors": list(self.errors),
            "mbps": {d: series(c) for d, c in self.ip_bytes.items()},
            "connections": [{"src": k[0], "sport": k[1], "dst": k[2], "dport": k[3],
                             "bytes": sum(c.values()), "per_second_mbps": series(c)}
                            for k, c in sorted(self.payload.items())],
        }
