"""The controller's first fit (controller/firstfit.py, controller/app.py) in
real namespaces: two TCP flows that the reactive hash puts on one shared
link are parted, by the switches' own interface counters."""
from __future__ import annotations

import pytest

from controller import paths
from controller.ecmp_hash import ecmp_index
from dctopo import DCTopo
from emulator.traffic.common import FlowEndpoints
from experiments.config import LinkParams
from kernel.transport import read_dev_bytes
from tests.conftest import needs_root

INTERVAL_S = 1.0
SERVER_PORT = 5201
SEED = 0


class TwoPaths(DCTopo):
    """h0, h1 - s0 = {m0, m1} = s1 - h2, h3: two equal paths between the
    sides, through m0 or m1."""

    def build(self):
        s0, m0, m1, s1 = (self.addSwitch(name, role=role, router_id=f"10.9.{i}.1", dpid=f"{i + 1:016x}")
                          for i, (name, role) in enumerate([("s0", "edge"), ("m0", "aggregation"),
                                                            ("m1", "aggregation"), ("s1", "edge")]))
        for i in range(4):
            h = self.addHost(f"h{i}", role="host")
            self.addLink(h, s0 if i < 2 else s1, port1=0, port2=i % 2, params1={"ip": f"10.9.9.{i + 2}/32"})
        for port, m in ((2, m0), (3, m1)):
            self.addLink(s0, m, port1=port, port2=0)
            self.addLink(m, s1, port1=1, port2=port)


def colliding_flows(topo: DCTopo) -> list[FlowEndpoints]:
    """h0 -> h2 and h1 -> h3 with client ports the controller's hash sends
    through m0 both."""
    flows = []
    for index, (src, dst) in enumerate([("h0", "h2"), ("h1", "h3")]):
        src_ip, dst_ip = (topo.host_addresses(h)[0].split("/")[0] for h in (src, dst))
        candidates = paths.address_paths(topo, src_ip, dst_ip)
        port = next(p for p in range(41000, 42000)
                    if candidates[ecmp_index(len(candidates), src_ip, dst_ip, 6, p, SERVER_PORT,
                                             seed=SEED)][1][0] == "m0")
        flows.append(FlowEndpoints(index, src, dst, src_ip, dst_ip, port, SERVER_PORT))
    return flows


def sent_toward_s1(net) -> dict[str, int]:
    return {m: read_dev_bytes(net.fabric.pid(m))[f"{m}-eth1"][1] for m in ("m0", "m1")}


@needs_root
def test_first_fit_parts_two_large_flows_on_one_link(tmp_path, no_leftovers):
    """Both flows start on m0 (the hash). The first round that finds both
    large (each a rate from two byte counts an interval apart) estimates
    each demand at the link rate and moves one to m1. A round before it
    may find one flow large (iperf3's clients can start a second apart),
    which fits where it is: no move. No round moves anything after. m1
    then carries that flow: its port toward s1 sends at least a third of
    what m0's does over the run."""
    from emulator.network import Network
    topo = TwoPaths()
    flows = colliding_flows(topo)
    with Network(topo, LinkParams(bw_mbps=10), "reno", seed=SEED, fabric="openflow-reactive",
                 log_dir=tmp_path / "fabric", fabric_options={"schedule_interval_s": INTERVAL_S}) as net:
        before = sent_toward_s1(net)
        outcomes = net.driver.run(flows, False, 8, tmp_path / "run")
        after = sent_toward_s1(net)
        rounds = net.fabric.schedule_rounds()
    assert all(o.error is None for o in outcomes), outcomes
    measured = [r for r in rounds if r["flows"] > 0]
    # The ACK flows back are measured too, and small: two large at most.
    both = next((i for i, r in enumerate(measured) if r["large"] == 2), None)
    assert both is not None and all(r["large"] <= 2 for r in measured), rounds
    assert not any(r["moves"] for r in measured[:both]), rounds
    [move] = measured[both]["moves"]
    assert move["from"] == ["s0", "m0", "s1"] and move["to"] == ["s0", "m1", "s1"], move
    assert move["demand_mbps"] == pytest.approx(10.0)
    assert not any(r["moves"] for r in measured[both + 1:]), rounds
    m0, m1 = (after[m] - before[m] for m in ("m0", "m1"))
    assert m1 >= m0 / 3 and m1 > 2e6, (m0, m1, rounds)


def test_first_fit_needs_the_reactive_mode():
    from emulator.fabrics.openflow import OpenFlowFabric
    with pytest.raises(ValueError, match="reactive"):
        OpenFlowFabric(TwoPaths(), LinkParams(), schedule_interval_s=1.0)
    with pytest.raises(ValueError, match="positive"):
        OpenFlowFabric(TwoPaths(), LinkParams(), mode="reactive", schedule_interval_s=0)


def test_the_sweep_takes_first_fit_on_the_reactive_fabric_only():
    from base.errors import ConfigError
    from harness.options import config_from_args
    cfg, _ = config_from_args(["4", "--fabric", "openflow-reactive", "--schedule-interval", "0.5",
                               "--subflows", "1"])
    assert [rc.as_record()["schedule_interval_s"] for rc in cfg.runs()] == [0.5]
    assert "schedule_interval_s" not in config_from_args(["4"])[0].runs()[0].as_record()
    for argv in (["4", "--schedule-interval", "1"],
                 ["4", "--fabric", "openflow", "--schedule-interval", "1"],
                 ["4", "--fabric", "openflow-reactive", "--schedule-interval", "0.01"]):
        with pytest.raises(ConfigError):
            config_from_args(argv)


def test_a_runs_first_fit_record_counts_the_rounds_during_it():
    from experiments.longflows import first_fit_record

    class Logged:
        def schedule_rounds(self):
            return [{"time": t, "decision_s": d, "moves": [{}] * m, "tracked": n}
                    for t, d, m, n in ((9.0, 0.5, 3, 40), (10.0, 0.001, 1, 7), (11.0, 0.004, 0, 9),
                                       (13.0, 0.2, 2, 30))]
    assert first_fit_record(Logged(), 1.0, 10.0, 12.0) == {
        "interval_s": 1.0, "rounds": 2, "moves": 1, "decision_s_max": 0.004, "flows_tracked_max": 9}
