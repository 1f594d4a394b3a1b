#!/usr/bin/env python3
"""How h1's and x1's packets leave them at the shared bottleneck of
experiments/fairness.py: are an MPTCP connection's subflows burstier than
single-path flows? (issue 24: its subflows lose 2-3 times as many of their
packets at the drop-tail queue as the Reno flow beside them.)

    sudo .venv/bin/python bench/diagnosis/send_bursts.py [--queue 25] [--time 30] [--cc reno]

One run of an MPTCP connection with two subflows under --cc, then one of
h1's two single-subflow Reno connections (TwoPathCase.run_two_flows), each
beside x1's Reno flow. During each, every TCP packet on h1-eth0, x1-eth0,
h2-eth0 and x2-eth0 is recorded with its kernel timestamp. Printed per data
flow: the share of its packets that never reached the receiver (what the
bottleneck dropped), packets, TCP segments per packet (GSO), and segments per burst, a burst
being the flow's packets that leave less than --gap-ms apart (the 10 Mb/s
bottleneck takes 1.2 ms per full packet, so a burst arrives faster than the
queue drains), and how long after an ACK arrives the host sends the data
packet that answers it (a full queue keeps a freed place for whoever
arrives first). Exit status 0 whatever it measures.
"""
from __future__ import annotations

import argparse
import json
import socket
import statistics
import struct
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from tempfile import TemporaryDirectory

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.cli import add_shared_bottleneck_options  # noqa: E402
from experiments.fairness import TwoPathCase  # noqa: E402
from emulator.keepawake import KeepAwake  # noqa: E402

SO_TIMESTAMPNS = 35        # linux/asm-generic/socket.h; Python's socket module lacks it
MSS = 1448


def capture(iface: str, seconds: float, out: Path) -> None:
    """Runs inside the namespace (nsenter): TCP packets on iface as JSON
    lines [timestamp, sport, dport, payload bytes, outgoing, seq, ack]. By hand with
    AF_PACKET: tcpdump is not among the harness's packages."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    sock.bind((iface, 0))
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.settimeout(0.5)
    end = time.monotonic() + seconds
    rows = []
    while time.monotonic() < end:
        try:
            data, anc, _flags, addr = sock.recvmsg(128, 64)
        except socket.timeout:
            continue
        if len(data) < 54 or data[12:14] != b"\x08\x00" or data[23] != 6:
            continue
        outgoing = addr[2] == socket.PACKET_OUTGOING
        ihl = (data[14] & 0x0F) * 4
        total = struct.unpack("!H", data[16:18])[0]
        sport, dport, seq, ack = struct.unpack("!HHII", data[14 + ihl:26 + ihl])
        payload = total - ihl - (data[14 + ihl + 12] >> 4) * 4
        stamp = next((struct.unpack("qq", v[:16]) for lvl, typ, v in anc
                      if lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS), None)
        if stamp:
            rows.append((stamp[0] + stamp[1] / 1e9, sport, dport, payload, outgoing, seq, ack))
    out.write_text("\n".join(json.dumps(r) for r in rows))


def bursts(rows: list, gap_s: float) -> list[int]:
    """Segments per burst of one flow's packets, in time order."""
    sizes, current, last = [], 0, None
    for stamp, _sport, _dport, payload, *_ in rows:
        if last is not None and stamp - last > gap_s:
            sizes.append(current)
            current = 0
        current += -(-payload // MSS)
        last = stamp
    return sizes + ([current] if current else [])


def describe(rows: list, gap_s: float) -> str:
    sizes = sorted(bursts(rows, gap_s))
    segs = sum(sizes)
    per_packet = segs / len(rows)
    in_big = sum(s for s in sizes if s >= 4) / segs
    return (f"{len(rows)} packets, {per_packet:.2f} segments each; segments per burst: mean "
            f"{statistics.fmean(sizes):.2f}, p90 {sizes[int(0.9 * len(sizes))]}, max {sizes[-1]}; "
            f"share of segments in bursts of 4 or more {in_big:.2f}")


def ack_to_send_us(rows: list, ports: set[int]) -> tuple[list[float], float]:
    """For each data packet the host sent on `ports`, microseconds since the
    last ACK it received on any of them, where that is under 5 ms (the
    packet was sent in answer to an ACK, not by a timer); and the share of
    those packets whose last ACK came on another of the ports: a subflow
    sending when its sibling is acknowledged, not when it is."""
    out, last_ack, crossed = [], None, 0
    for stamp, sport, dport, payload, outgoing, *_ in rows:
        if not outgoing and dport in ports and not payload:
            last_ack = (stamp, dport)
        elif outgoing and sport in ports and last_ack is not None and stamp - last_ack[0] < 0.005:
            out.append(1e6 * (stamp - last_ack[0]))
            crossed += last_ack[1] != sport
    return sorted(out), crossed / len(out) if out else float("nan")


def ack_turnaround_us(rows: list) -> dict[tuple[int, int], list[float]]:
    """At a receiver, per flow (its local port, the peer's): for each ACK
    it sent within 1 ms of a data packet arriving on that flow, the
    microseconds since that arrival. At a full drop-tail queue a freed place
    goes to whichever packet arrives first, so a receiver that answers a few
    microseconds later puts its sender's next packets behind the others'."""
    last: dict[tuple[int, int], float] = {}
    out: dict[tuple[int, int], list[float]] = defaultdict(list)
    for stamp, sport, dport, payload, outgoing, *_ in rows:
        if not outgoing and payload:
            last[(dport, sport)] = stamp
        elif outgoing and not payload and (sport, dport) in last and stamp - last[(sport, dport)] < 0.001:
            out[(sport, dport)].append(1e6 * (stamp - last[(sport, dport)]))
    return {k: sorted(v) for k, v in out.items()}


def ack_delays_ms(rows: list) -> dict[tuple[int, int], list[float]]:
    """At a receiver, per flow (its local port, the peer's): for each data
    packet, the milliseconds until the host sent an ACK covering it. The
    receiver's delayed ACKs set the sender's clock."""
    waiting: dict[tuple[int, int], list[tuple[int, float]]] = defaultdict(list)
    delays: dict[tuple[int, int], list[float]] = defaultdict(list)
    for stamp, sport, dport, payload, outgoing, seq, ack in rows:
        if not outgoing and payload:
            waiting[(dport, sport)].append(((seq + payload) % (1 << 32), stamp))
        elif outgoing and not payload:
            pending = waiting[(sport, dport)]
            # a sequence number at or before the ACK, modulo 2^32
            covered = [w for w in pending if (ack - w[0]) % (1 << 32) < 1 << 31]
            delays[(sport, dport)].extend(1000 * (stamp - t) for _, t in covered)
            waiting[(sport, dport)] = [w for w in pending if w not in covered]
    return {k: sorted(v) for k, v in delays.items()}


def _rows(path: Path) -> list:
    return sorted((json.loads(line) for line in path.read_text().splitlines()), key=lambda r: r[0])


def report(files: dict[str, Path], gap_s: float) -> None:
    """Per sender (h1, x1) and its data flows; the receivers' files (h2, x2)
    give the share of each flow's packets that never arrived."""
    arrived = defaultdict(int)
    for host in ("h2", "x2"):
        rows = _rows(files[host])
        for stamp, sport, dport, payload, outgoing, *_ in rows:
            if not outgoing and payload > 0:
                arrived[(sport, dport)] += 1
        for (sport, dport), delays in sorted(ack_delays_ms(rows).items()):
            if len(delays) > 1000:
                print(f"    {host} acknowledging {dport}->{sport}: {len(delays)} data packets, "
                      f"arrival to the ACK that covers it median {delays[len(delays) // 2]:.2f} ms, "
                      f"p90 {delays[int(0.9 * len(delays))]:.2f} ms, over 5 ms "
                      f"{100 * sum(d > 5 for d in delays) / len(delays):.1f} %")
        for (sport, dport), turn in sorted(ack_turnaround_us(rows).items()):
            if len(turn) > 1000:
                print(f"    {host} answering {dport}->{sport}: {len(turn)} ACKs, from the data packet's "
                      f"arrival to the ACK leaving: p10 {turn[len(turn) // 10]:.1f} us, median "
                      f"{turn[len(turn) // 2]:.1f} us, p90 {turn[int(0.9 * len(turn))]:.1f} us")
    for host in ("h1", "x1"):
        rows = _rows(files[host])
        flows = defaultdict(list)
        for r in rows:
            if r[4] and r[3] > 0:      # data it sent (the capture now keeps its pure ACKs too)
                flows[(r[1], r[2])].append(r)
        data = {k: v for k, v in flows.items() if sum(r[3] for r in v) > 100_000}
        for (sport, dport), mine in sorted(data.items()):
            lost = 1 - arrived[(sport, dport)] / len(mine)
            print(f"    {host} port {sport}->{dport}: {100 * lost:.2f} % of its packets did not arrive; "
                  f"{describe(mine, gap_s)}")
        if len(data) > 1:
            together = sorted((r for mine in data.values() for r in mine), key=lambda r: r[0])
            print(f"    {host}, its flows together: {describe(together, gap_s)}")
        lag, crossed = ack_to_send_us(rows, {sport for sport, _ in data})
        if lag:
            print(f"    {host}: from an ACK received to the next data packet sent, {len(lag)} packets: "
                  f"median {lag[len(lag) // 2]:.0f} us, p90 {lag[int(0.9 * len(lag))]:.0f} us; "
                  f"the ACK was another flow's for {100 * crossed:.1f} %")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_shared_bottleneck_options(ap)
    ap.add_argument("--gap-ms", type=float, default=0.6)
    ap.add_argument("--capture", nargs=3, metavar=("IFACE", "SECONDS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.capture:
        capture(args.capture[0], float(args.capture[1]), Path(args.capture[2]))
        return 0
    with KeepAwake(), TemporaryDirectory() as tmp, TwoPathCase("shared", 10, args.queue, 1) as case:
        for what in ("mptcp", "two flows"):
            files = {h: Path(tmp) / f"{what}-{h}.jsonl" for h in ("h1", "x1", "h2", "x2")}
            seconds = args.warmup + args.time + 3
            catchers = [subprocess.Popen(
                ["nsenter", "-t", str(case.net.fabric.pid(h)), "-n", sys.executable, __file__,
                 "--capture", f"{h}-eth0", str(seconds), str(f)]) for h, f in files.items()]
            try:
                result = (case.run(args.cc, args.time, args.warmup, Path(tmp)) if what == "mptcp"
                          else case.run_two_flows(args.time, args.warmup, Path(tmp)))
                for c in catchers:
                    c.wait(timeout=seconds + 30)
            finally:
                for c in catchers:
                    if c.poll() is None:
                        c.kill()
                        c.wait(timeout=5)
            print(f"  {result.line()}", flush=True)
            report(files, args.gap_ms / 1000)
    return 0


if __name__ == "__main__":
    sys.exit(main())
