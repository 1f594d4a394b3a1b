"""The capacity guard over servers (`--servers`): each machine judged on its
own share of the forwarding, with its own calibration and cores.

A packet-hop costs CPU on the machine whose node sends it (the l3 fabric's
cost is per packet leaving a shaped port); a hop through a tunnel costs
TUNNEL_COST times a local one (bench/tunnel_cost.py; docs/notebook.md).
Placed by pods, a flow's hops inside its pods cost its end's servers, and
the hops through a core switch are shared out as the cores are. Servers
that share a kernel are one machine: their shares add up against its cores.
"""
from __future__ import annotations

from dataclasses import dataclass

from experiments.capacity.calibration import Calibration
from experiments.capacity.prediction import (CPU_BUDGET_PCT, Verdict, cost_for, predict_pct,
                                             verdict_for)

TUNNEL_COST = 1.35


def core_shares(placement) -> dict[str, float]:
    """Server -> the share of the core switches it runs (ECMP spreads a
    pod-crossing flow's core hop over them all alike)."""
    cores = [s for n, s in placement.where.items() if n.startswith("c")]
    return {s: cores.count(s) / len(cores) for s in set(cores)}


def hop_costs(placement, cores: dict[str, float], path_links: int, src: str, dst: str) -> dict[str, float]:
    """Server -> packet-hops (tunnelled ones weighted) one packet from host
    `src` to host `dst` costs, the core hop spread as `cores` (core_shares) says."""
    s, d = placement.where[src], placement.where[dst]
    if path_links < 6:          # within one pod: every hop on its server
        return {s: float(path_links)}
    out = {s: 2.0}              # host -> edge -> aggregation
    out[d] = out.get(d, 0.0) + 2.0      # aggregation -> edge -> host
    for c, share in cores.items():
        out[s] += share * (TUNNEL_COST if c != s else 1.0)              # aggregation -> core
        out[c] = out.get(c, 0.0) + share * (TUNNEL_COST if c != d else 1.0)     # core -> aggregation
    return out


def demand_by_server(shape, placement, matrix, bw_mbps: float) -> dict[str, float]:
    """Server -> Gbit-hops it forwards if every flow of `matrix` ran at its optimal rate."""
    out = dict.fromkeys(placement.servers, 0.0)
    cores = core_shares(placement)
    for flow in matrix.flows:
        rate = bw_mbps * matrix.share(flow) / 1000.0
        for server, hops in hop_costs(placement, cores, shape.path_links(flow.src, flow.dst),
                                      flow.src, flow.dst).items():
            out[server] += rate * hops
    return out


@dataclass(frozen=True)
class Machine:
    """One machine of the servers: the servers on it, its calibration and where that came from."""
    servers: tuple[str, ...]
    calibration: Calibration
    source: str                 # "its own" or why another stands in

    @property
    def label(self) -> str:
        return " + ".join(self.servers)


@dataclass(frozen=True)
class ServersVerdict:
    """Every machine's verdict; fits where each does."""
    machines: tuple[tuple[Machine, Verdict], ...]

    @property
    def fits(self) -> bool:
        return all(v.fits for _, v in self.machines)

    @property
    def suggested_bw_mbps(self) -> float | None:
        rates = [v.suggested_bw_mbps for _, v in self.machines if not v.fits]
        return min(rates) if rates else None

    def reason(self) -> str:
        v0 = self.machines[0][1]
        cores = sum(m.calibration.machine["cpus"] for m, _ in self.machines)
        each = "; ".join(f"{m.label} about {v.predicted_cpu_pct:.0f} % of its "
                         f"{m.calibration.machine['cpus']} cores ({v.demand_gbit_hops:.2f} Gb/s, "
                         f"{m.source} calibration)" for m, v in self.machines)
        text = (f"at {v0.bw_mbps:g} Mb/s over {len(self.machines)} machine"
                f"{'s' if len(self.machines) > 1 else ''} ({cores} cores in all) on the "
                f"{v0.fabric} fabric: {each} (budget {v0.budget_pct:.0f} % each; tunnelled hops "
                f"count {TUNNEL_COST:g} times)")
        if not self.fits:
            text += (f"; fidelity cannot hold: use --bw {self.suggested_bw_mbps:g} or less, more "
                     "servers, or --force")
        return text

    def as_record(self) -> dict:
        worst = max((v for _, v in self.machines), key=lambda v: v.predicted_cpu_pct)
        return {**worst.as_record(), "fits": self.fits,
                "suggested_bw_mbps": self.suggested_bw_mbps,
                "by_machine": {m.label: {**v.as_record(), "cores": m.calibration.machine["cpus"],
                                         "calibration": m.source} for m, v in self.machines}}


def judge_servers(cfg, machines: list[Machine], budget_pct: float = CPU_BUDGET_PCT) -> ServersVerdict:
    """The verdict for a FatTree sweep over `cfg.servers`: each machine's
    share of its most demanding workload against its own budget."""
    from dctopo.fattree_shape import FatTreeShape
    from dctopo.workloads import make_matrix

    shape, placement = FatTreeShape(cfg.k), cfg.placement()
    per_mbps = {w: demand_by_server(shape, placement, make_matrix(w, shape.hosts(), cfg.seed), 1.0)
                for w in cfg.workloads}
    verdicts = []
    for m in machines:
        def runs_at(rate: float, m=m) -> list[tuple[float, float, float, str]]:
            out = []
            for w, by_server in per_mbps.items():
                demand = rate * sum(by_server[s] for s in m.servers)
                cost, basis = cost_for(m.calibration, cfg.k, w, rate)
                out.append((predict_pct(m.calibration, demand, cost), demand, cost, basis))
            return out
        verdicts.append((m, verdict_for(m.calibration, cfg.fabric, cfg.link.bw_mbps, runs_at,
                                        set(), budget_pct)))
    return ServersVerdict(tuple(verdicts))


def stand_in_machines(cfg, cal: Calibration) -> list[Machine]:
    """Before the servers answer (--plan, the check before set-up): each
    server as a machine like this one."""
    return [Machine((s,), cal, "this machine's (standing in)") for s in cfg.servers]


def machines_of(kernels: list[list[tuple[str, dict]]], fabric: str) -> tuple[list[Machine], list[str]]:
    """The machines of the servers (`kernels`: the servers that share one
    kernel, as (name, worker identity)), each with its own calibration or,
    where it has none, this machine's where they are alike; and the servers
    that have neither."""
    from experiments.capacity.cache import load, parse
    here = load(fabric)
    machines, uncalibrated = [], []
    for servers in kernels:
        name, ident = servers[0]
        own = parse(ident.get("calibration") or {}, fabric, ident["machine"])
        if own is not None:
            machines.append(Machine(tuple(n for n, _ in servers), own, "its own"))
        elif here is not None and here.machine == ident["machine"]:
            machines.append(Machine(tuple(n for n, _ in servers), here,
                                    "this machine's (it has none; the same kernel, cores and CPU)"))
        else:
            uncalibrated.append(name)
    return machines, uncalibrated


def admit_servers(cfg, kernels: list[list[tuple[str, dict]]], say=print) -> ServersVerdict | None:
    """The guard over servers once their workers have said what they are: a
    refusal (ConfigError) where a machine's share does not fit its cores or
    a machine cannot be judged, unless --force."""
    from base.errors import ConfigError
    machines, uncalibrated = machines_of(kernels, cfg.fabric)
    if uncalibrated:
        why = (f"{', '.join(uncalibrated)}: no calibration of the {cfg.fabric} fabric there, and "
               "unlike this machine; `sudo ./run_mptcp.sh 4` there once measures it")
        if not cfg.force:
            raise ConfigError(f"capacity: {why}, or --force")
        say(f"capacity: not judged: {why}; going on (--force)")
        return None
    verdict = judge_servers(cfg, machines)
    if not verdict.fits and not cfg.force:
        raise ConfigError(f"capacity: {verdict.reason()}")
    say(f"capacity: {verdict.reason()}"
        + ("; going on (--force), runs flagged over_capacity" if not verdict.fits else ""))
    return verdict
