"""MPTCP's subflow send queues on the smallest network that has two paths:
one connection (iperf3 under mptcpize) from h1 to h2 over WiFi3G's two
disjoint paths shaped to 4 and 0.5 Mb/s, 100-packet queues, the initial
subflow on the fast path and our path manager's second on the slow one. The
sender's subflows are read from the kernel (sock_diag: tcpi_notsent_bytes,
cwnd, rtt) every second, with the kernel's default and with
net.ipv4.tcp_notsent_lowat=4096 in both hosts (`run_mptcp.sh --notsent-lowat`).

What it pins, on the kernel's own counters: the lowat does not bound a
subflow's unsent data on this kernel (each subflow still holds far more than
4 KB unsent at times); the send buffer does (`run_mptcp.sh --wmem-max`:
no subflow holds more unsent than net.ipv4.tcp_wmem's maximum and one
fragment). The hosts get the settings as the sweep gives them, from its
options. Goodput and its stalls are printed, not asserted;
docs/notebook.md (the FatTree(8) diagnosis) has the numbers."""
from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from pathlib import Path

import pytest

from base.links import LinkParams
from emulator.traffic.common import CLIENT_PORT_BASE, SERVER_PORT_BASE, FlowEndpoints
from tests.conftest import needs_root

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench" / "diagnosis"))

import diagnosis_kernel as dk  # noqa: E402

FAST_LINK = LinkParams(bw_mbps=4, queue_pkts=100)
SLOW_LINK = LinkParams(bw_mbps=0.5, queue_pkts=100)
FAST, SLOW = "wifi", "3g"          # WiFi3G's names of its two paths
LOWAT = 4096
RUN_S = 30
# Medians leave out the start: slow start, and the slow path's queue
# (2.4 s at 0.5 Mb/s) filling.
SETTLE_S = 10
SAMPLE_S = 1.0
# What the scheduler could hand a subflow past LOWAT if the lowat bounded
# it: the last fragment it pushes, itself at most LOWAT (mptcp_sendmsg()
# queues no more than that unsent at connection level, mptcp_send_limit()).
LOWAT_BOUND = 2 * LOWAT
# Far more than the lowat and one fragment past it (docs/notebook.md, the FatTree(8) diagnosis).
UNBOUNDED = 10 * LOWAT
FIELDS = ("notsent", "cwnd", "rtt_us", "bytes_acked", "mss")
WMEM_MAX = 131072
# What a subflow may queue past its send buffer: the fragment being pushed
# when the buffer filled (mptcp's page fragments are at most 32 KB).
FRAGMENT = 32768
VARIANTS = {"kernel-default": [], f"lowat-{LOWAT}": ["--notsent-lowat", str(LOWAT)],
            f"lowat-{LOWAT}-wmem-{WMEM_MAX}": ["--notsent-lowat", str(LOWAT), "--wmem-max", str(WMEM_MAX)]}


class SubflowSampler:
    """Every SAMPLE_S, the sender's subflows of one connection (by local
    address; the fast one also by the client's port, which iperf3's control
    connection, also MPTCP, does not share) read over sock_diag."""

    def __init__(self, ns_pid: int, flow: FlowEndpoints, slow_ip: str):
        from kernel import netlink as nl
        self.sock = nl.DumpSocket(ns_pid, nl.NETLINK_SOCK_DIAG)
        self.flow, self.slow_ip = flow, slow_ip
        self.rows: dict[str, list[dict]] = {FAST: [], SLOW: []}
        self.conn: list[dict] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="subflow-sampler", daemon=True)
        self._layout = dk.tcp_layout(FIELDS)

    def start(self) -> None:
        self.t0 = time.monotonic()
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.sock.close()

    def _run(self) -> None:
        f = self.flow
        while not self._stop.wait(SAMPLE_S):
            t = time.monotonic() - self.t0
            tcp, msk = dk.read_host(self.sock, self._layout)
            for s in tcp:
                if s["dport"] != f.server_port or "token" not in s:
                    continue
                if s["saddr"] == f.src_ip and s["sport"] == f.client_port:
                    self.rows[FAST].append({"t": t, **s})
                elif s["saddr"] == self.slow_ip:
                    self.rows[SLOW].append({"t": t, **s})
            self.conn += [{"t": t, **m} for m in msk if m["sport"] == f.client_port]


def settled(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["t"] >= SETTLE_S]


def median_of(rows: list[dict], field: str) -> float:
    return statistics.median(r[field] for r in rows) if rows else float("nan")


def rate_bps(rows: list[dict]) -> float:
    """What the subflow delivered (bytes_acked) per second while sampled."""
    if len(rows) < 2 or rows[-1]["t"] <= rows[0]["t"]:
        return 0.0
    return (rows[-1]["bytes_acked"] - rows[0]["bytes_acked"]) / (rows[-1]["t"] - rows[0]["t"])


def longest_stall(per_second: list[float], mean: float) -> int:
    """The longest run of seconds with goodput under 10 % of `mean`."""
    longest = run = 0
    for x in per_second:
        run = run + 1 if x < 0.1 * mean else 0
        longest = max(longest, run)
    return longest


@pytest.fixture
def net(no_leftovers):
    from dctopo import WiFi3G
    from emulator.network import Network
    with Network(WiFi3G(wifi=FAST_LINK, cell=SLOW_LINK), LinkParams(), "reno") as net:
        yield net


def test_the_sweeps_host_settings_reach_its_records_and_figures():
    from experiments.config.fattree import host_sysctls
    from figures.runs import Run, routing
    from harness.options import config_from_args
    cfg, _ = config_from_args(["4", *VARIANTS[f"lowat-{LOWAT}-wmem-{WMEM_MAX}"]])
    assert host_sysctls(cfg) == {"net.ipv4.tcp_notsent_lowat": str(LOWAT),
                                 "net.ipv4.tcp_wmem": f"4096 16384 {WMEM_MAX}"}
    record = cfg.runs()[0].as_record()
    assert record["notsent_lowat"] == LOWAT and record["wmem_max"] == WMEM_MAX
    run = Run(path=Path("run.json"), topology="ft4", workload="one_to_one", subflows=1, config=record,
              pcts=[50.0], valid=True, flags=[])
    title = routing({1: run})
    assert f"wmem_max {WMEM_MAX} B" in title and f"notsent_lowat {LOWAT} B" in title
    assert host_sysctls(config_from_args(["4"])[0]) == {}


@needs_root
@pytest.mark.parametrize("variant", VARIANTS)
def test_subflows_unsent_data_is_bounded_by_the_send_buffer_not_the_lowat(net, variant, tmp_path):
    from experiments.config.fattree import host_sysctls
    from harness.options import config_from_args
    from kernel.transport import counter_delta, read_netstat, read_sysctls
    topo = net.topo
    cfg, _ = config_from_args(["4", *VARIANTS[variant]])
    lowat, wmem_max = cfg.notsent_lowat, cfg.wmem_max
    for host in ("h1", "h2") if host_sysctls(cfg) else ():
        net.sysctl(host, host_sysctls(cfg))
    # What the sender's sockets will read (the kernel's defaults: no limit, 4 MiB).
    assert read_sysctls(net.fabric.pid("h1"), ("net.ipv4.tcp_notsent_lowat", "net.ipv4.tcp_wmem")) == {
        "net.ipv4.tcp_notsent_lowat": str(lowat or 0xFFFFFFFF),
        "net.ipv4.tcp_wmem": f"4096 16384 {wmem_max or 4194304}"}
    src_ip, dst_ip = topo.path_addresses(FAST)
    slow_src, slow_dst = topo.path_addresses(SLOW)
    flow = FlowEndpoints(0, "h1", "h2", src_ip, dst_ip, CLIENT_PORT_BASE, SERVER_PORT_BASE)
    net.pm.expand("h1", (src_ip, flow.client_port), (dst_ip, flow.server_port), 2,
                  paths=[(slow_src, slow_dst)])
    sampler = SubflowSampler(net.fabric.pid("h1"), flow, slow_src)
    before = {h: read_netstat(net.fabric.pid(h)) for h in ("h1", "h2")}
    try:
        # bind_servers=False: the second subflow joins on h2's other address.
        [out] = net.driver.run([flow], True, RUN_S, tmp_path / "iperf", on_started=sampler.start,
                               bind_servers=False)
    finally:
        sampler.close()
    grew = {h: counter_delta(before[h], read_netstat(net.fabric.pid(h))) for h in ("h1", "h2")}
    print({h: {k: v for k, v in g.items() if k.startswith("MPTcp") or "Retrans" in k or "RTO" in k}
           for h, g in grew.items()})
    assert out.error is None, out.error
    [conn] = [c for c in net.pm.connections() if c.ns == "h1" and c.sport == flow.client_port]
    assert conn.subflows_established == 2 and not conn.create_errors, conn

    (tmp_path / "subflows.json").write_text(json.dumps({"subflows": sampler.rows,
                                                         "connection": sampler.conn,
                                                         "per_second_mbps": out.per_second_mbps}))
    fast, slow = settled(sampler.rows[FAST]), settled(sampler.rows[SLOW])
    assert len(fast) >= RUN_S - SETTLE_S - 5 and len(slow) >= RUN_S - SETTLE_S - 5, (
        len(fast), len(slow))
    slow_rate = rate_bps(slow)
    assert slow_rate > 0, "the slow subflow delivered nothing"
    per_second = out.counted_per_second_mbps(SETTLE_S)
    mean = statistics.fmean(per_second) if per_second else 0.0
    slow_notsent = median_of(slow, "notsent")
    said = (f"lowat={lowat}: notsent median fast {median_of(fast, 'notsent'):.0f} B, "
            f"slow {slow_notsent:.0f} B (max {max(r['notsent'] for r in slow)} B, "
            f"{slow_notsent / slow_rate:.1f} s of its {8 * slow_rate / 1e3:.0f} kb/s); "
            f"cwnd median fast {median_of(fast, 'cwnd'):.0f} slow {median_of(slow, 'cwnd'):.0f}; "
            f"rtt median fast {median_of(fast, 'rtt_us') / 1e3:.0f} ms "
            f"slow {median_of(slow, 'rtt_us') / 1e3:.0f} ms; "
            f"connection wmem_queued median {median_of(settled(sampler.conn), 'wmem_queued'):.0f} B "
            f"of sndbuf {median_of(settled(sampler.conn), 'sndbuf'):.0f}; "
            f"goodput mean {mean:.2f} Mb/s, longest stall {longest_stall(per_second, mean)} s; "
            f"per second {[round(x, 2) for x in per_second]}")
    print(said)
    if wmem_max:
        # The send buffer bounds it, at every sample of both subflows.
        assert max(r["notsent"] for r in sampler.rows[FAST] + sampler.rows[SLOW]) <= wmem_max + FRAGMENT, said
    else:
        # With or without the lowat, some subflow holds far more than it (and
        # than one fragment past it) unsent at times; which one varies.
        assert max(r["notsent"] for r in fast + slow) > UNBOUNDED > LOWAT_BOUND, said
