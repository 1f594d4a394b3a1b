"""A network for traffic matrices over racks (`dhft`, `oversub`, `topologies`): each flow on one of
its hosts' interfaces (a plane, on a multi-homed topology), MPTCP's further
subflows alternating over the planes, and the bytes each interface sent.
On single-homed hosts there is one plane and every subflow starts from the
same address pair; ECMP hashes them by source port."""
from __future__ import annotations

import dataclasses
import random
import statistics
import time
from pathlib import Path

from dctopo import DCTopo
from emulator.network import Network
from emulator.traffic.common import FlowEndpoints
from experiments.longflows import (PAYLOAD_PER_FRAME, client_connections, flow_key,
                                   flow_mptcp_fields, run_flags, subflows_ready)
from experiments.runner import Experiment
from experiments.startup import PhaseClock, clients_started_late, startup_record
from kernel import transport
from monitor import CpuMonitor
from dctopo.workloads import TrafficMatrix, make_rack_matrix


class RackNetwork(Network):
    """A topology on a fabric, every host ready for MPTCP. `cfg` is any
    config with link, cc, seed, fabric and driver (LongFlowSettings,
    experiments/config/common.py)."""

    def __init__(self, topo: DCTopo, cfg):
        super().__init__(topo, cfg.link, cfg.cc, seed=cfg.seed, fabric=cfg.fabric, driver=cfg.driver)

    def endpoints(self, matrix: TrafficMatrix, seed: int) -> list[FlowEndpoints]:
        """Ports as the driver gives them, and for each flow a plane drawn
        at random (seeded): its sender's and receiver's address on it."""
        rng = random.Random(f"planes:{matrix.workload}:{matrix.param}:{seed}")
        flows = self.driver.endpoints(list(matrix.flows))
        for f in flows:
            src, dst = self.topo.host_addresses(f.src), self.topo.host_addresses(f.dst)
            plane = rng.randrange(min(len(src), len(dst)))
            f.src_ip, f.dst_ip = src[plane], dst[plane]
        return flows

    def subflow_paths(self, f: FlowEndpoints, subflows: int) -> list[tuple[str, str]]:
        """(local, remote) addresses of the subflows after the first: planes
        alternate starting with the one the first subflow does not use."""
        src, dst = self.topo.host_addresses(f.src), self.topo.host_addresses(f.dst)
        first = src.index(f.src_ip)
        planes = min(len(src), len(dst))
        return [(src[(first + i) % planes], dst[(first + i) % planes]) for i in range(1, subflows)]

    def arm(self, flows: list[FlowEndpoints], subflows: int) -> None:
        self.pm.reset()
        self.pm.forget_expansions()
        if subflows > 1:
            for f in flows:
                self.pm.expand(f.src, (f.src_ip, f.client_port), (f.dst_ip, f.server_port),
                               subflows, paths=self.subflow_paths(f, subflows))

    def sent_by_interface(self) -> dict[int, int]:
        """Bytes the hosts have sent, summed by interface (port) number."""
        out: dict[int, int] = {}
        for host in self.fabric.hosts():
            for name, (_, sent) in transport.read_dev_bytes(self.fabric.pid(host)).items():
                port = int(name.rsplit("eth", 1)[1])
                out[port] = out.get(port, 0) + sent
        return out


class RackExperiment(Experiment):
    """Runs on RackNetworks: each point (with `workload` and `x`) draws its
    matrix with workloads.make_rack_matrix; a subclass says how many
    subflows a point has and what of its config goes into run.json.

    By default a point's scheme says whether it runs MPTCP (a name in
    MPTCP_SCHEMES, with the config's `subflows`) and its folder is named
    from the config's results and arity k."""
    MPTCP_SCHEMES: tuple[str, ...] = ()
    network_class = RackNetwork
    # One network for every point, or one per congestion control that the
    # points compare: then a point's cc builds its network.
    network_per_cc = False

    capacity = None       # the guard's verdict (experiments/capacity/guard.py), from admit()

    def points(self) -> list:
        return self.cfg.points()

    def topology(self, key) -> DCTopo:
        """The topology of the network `key` names (built or not)."""
        raise NotImplementedError

    def prepare(self, net: RackNetwork) -> None:
        self.say(f"built {type(net.topo).__name__}({self.cfg.k}) on fabric {net.fabric.name} with cc "
                 f"{net.cc}: {len(net.fabric.hosts())} hosts, {len(net.topo.switches())} switches"
                 + "".join(f", {note}" for note in self.built_notes(net)))

    def built_notes(self, net: RackNetwork) -> list[str]:
        """What prepare()'s line adds about this experiment's network."""
        return []

    def network_key(self, p) -> str:
        return p.cc if self.network_per_cc else self.name

    def network(self, key) -> RackNetwork:
        cfg = dataclasses.replace(self.cfg, cc=key) if self.network_per_cc else self.cfg
        return self.network_class(self.topology(key), cfg)

    def loads(self) -> list:
        """(topology, traffic matrix) of every point, what the guard judges."""
        topos: dict = {}
        loads = []
        for p in self.points():
            key = self.network_key(p)
            topo = topos[key] if key in topos else topos.setdefault(key, self.topology(key))
            loads.append((topo, self.matrix_on(topo, p)))
        return loads

    def admit(self) -> None:
        """The capacity guard on the costliest run: every point's matrix on
        its topology, at the config's link rate."""
        from experiments.capacity.guard import admit_matrices
        self.capacity = admit_matrices(self.cfg, self.loads(), self.say)

    def run_dir(self, p) -> Path:
        return p.run_dir(self.cfg.results, self.cfg.k)

    def subflows_of(self, p) -> int:
        return self.cfg.subflows if p.scheme in self.MPTCP_SCHEMES else 1

    def config_record(self, net: RackNetwork, p, subflows: int) -> dict:
        raise NotImplementedError

    def matrix_on(self, topo: DCTopo, p) -> TrafficMatrix:
        """The point's traffic matrix: workloads.make_rack_matrix of its
        workload and x over the topology's racks."""
        return make_rack_matrix(p.workload, topo.hosts(sort=True), topo.racks(), p.x, self.cfg.seed)

    def matrix(self, net: RackNetwork, p) -> TrafficMatrix:
        return self.matrix_on(net.topo, p)

    def during_run(self, net: RackNetwork, p):
        """Something done to the network during the run (the link-failure
        experiment's degraded link), or None: start() when the traffic
        starts, stop() -> what it did, for run.json's "event"."""
        return None

    def summarise(self, record: dict) -> str:
        return (f"aggregate {record['aggregate_mbps']:.1f} Mb/s "
                f"({record['pct_of_host_links']:.0f} % of the hosts' links), "
                f"{record['local_fraction']:.0%} rack-local, cpu {record['cpu_mean_pct']} %")

    def run_point(self, net: RackNetwork, p, folder: Path) -> dict:
        cfg = self.cfg
        matrix = self.matrix(net, p)
        flows = net.endpoints(matrix, cfg.seed)
        subflows = self.subflows_of(p)
        # The start-up is recorded as the FatTree sweep records it
        # (experiments/startup.py): phases by marks, connections from the
        # path manager, the CPU samples from the clients' start on.
        clock = PhaseClock()
        clock.mark("begin")
        net.arm(flows, subflows)
        clock.mark("reconfigure_hosts")
        cpu = CpuMonitor(interval_s=1.0)
        cpu_t0 = time.monotonic()
        event = self.during_run(net, p)
        event_record = None

        def traffic_started() -> None:
            nonlocal cpu_t0
            clock.mark("start_clients")
            cpu_t0 = time.monotonic()
            cpu.start(t0=cpu_t0)
            if event is not None:
                event.start()
        counters, sent = net.kernel_counters(), net.sent_by_interface()
        clock.mark("bookkeeping")
        try:
            outcomes = net.driver.run(flows, subflows > 1, cfg.time_s, folder / "iperf",
                                      on_started=traffic_started, warmup_s=cfg.warmup,
                                      bind_servers=subflows == 1,
                                      on_starting=lambda: clock.mark("start_servers"),
                                      ready=subflows_ready(net.pm, flows, subflows))
        finally:
            cpu.stop()
            if event is not None:
                event_record = event.stop()
        counters = transport.counter_delta(counters, net.kernel_counters())
        sent = {port: n - sent.get(port, 0) for port, n in net.sent_by_interface().items()}
        cpu.write_csv(folder / "cpu.csv")
        record = self._record(net, p, matrix, outcomes, subflows, cpu, counters, sent)
        record["startup"] = startup_record(clock, client_connections(net.pm), [flow_key(f) for f in flows],
                                           subflows, cpu.samples, cpu_t0)
        if clients_started_late(record["startup"], cfg.warmup, net.driver.clients_send_at_start):
            record["flags"].append("clients_started_late")
        if event_record is not None:
            record["event"] = event_record
            if event_record.get("errors"):
                record["flags"].append("event_failed")
        return record

    def _record(self, net: RackNetwork, p, matrix: TrafficMatrix, outcomes,
                subflows: int, cpu: CpuMonitor, counters: dict[str, int],
                sent: dict[int, int]) -> dict:
        cfg = self.cfg
        racks = net.topo.racks()
        mptcp_fields = flow_mptcp_fields(net.pm, subflows)
        link_mbps = cfg.link.bw_mbps * PAYLOAD_PER_FRAME
        flows = []
        for o in outcomes:
            f = o.endpoints
            flows.append({
                "src": f.src, "dst": f.dst, "src_ip": f.src_ip, "dst_ip": f.dst_ip,
                "client_port": f.client_port, "server_port": f.server_port,
                "rack_local": racks[f.src] == racks[f.dst],
                "goodput_mbps": o.goodput_mbps,
                "pct_of_link": round(100.0 * o.goodput_mbps / link_mbps, 2),
                "seconds": o.seconds, "whole_run_mbps": o.whole_mbps, "first_data_s": o.first_data_s,
                "per_second_mbps": o.per_second_mbps or [],
                **mptcp_fields(o),
                "error": o.error,
            })
        flags = run_flags(subflows, flows, outcomes, cpu, counters,
                          window=(cfg.warmup, cfg.warmup + cfg.time_s)) + net.health_flags()
        if self.capacity is not None and not self.capacity.fits:
            flags.append("over_capacity")
        hosts = len(net.fabric.hosts())
        aggregate = sum(fl["goodput_mbps"] for fl in flows)
        total_sent = sum(sent.values())
        return {
            "config": {**self.config_record(net, p, subflows), "driver": net.driver.name},
            "hosts": hosts,
            "switch_ports": net.topo.switch_ports(),
            "link_mbps": round(link_mbps, 4),
            "matrix": matrix.to_record(),
            "local_fraction": round(matrix.local_fraction(racks), 4),
            "flows": flows,
            "aggregate_mbps": round(aggregate, 3),
            "mean_flow_mbps": round(statistics.fmean(fl["goodput_mbps"] for fl in flows), 4),
            # Aggregate over what every host's one link could carry: 100 %
            # is the perfect switch's ceiling, 200 % DHFT's.
            "pct_of_host_links": round(100.0 * aggregate / (hosts * link_mbps), 2),
            "interface_share": {f"eth{port}": round(n / total_sent, 4) if total_sent else 0.0
                                for port, n in sorted(sent.items())},
            "cpu_mean_pct": cpu.mean_pct(),
            "capacity": self.capacity.as_record() if self.capacity is not None else None,
            "kernel_counters": counters,
            "flags": flags,
        }
