#!/usr/bin/env python3
"""Why MPTCP-N falls short at FatTree(k) (issue 54): one FatTree run through
the harness's own Sweep, with the kernel's state of every data connection
sampled meanwhile, and each candidate cause's share of the missing
throughput.

    sudo .venv/bin/python bench/diagnosis/k8_diagnosis.py [--k 8] [--subflows 8] [--bw 0.5]
        [--time S] [--warmup S] [--seed 0] [--interval 2] [--driver iperf3]
        [--cc CC] [--queue 100] [--out DIR]
        [--host-sysctl net.KEY=VALUE ...] [--spread-paths]
    .venv/bin/python bench/diagnosis/k8_diagnosis.py --reanalyse DIR    # from a run's files, no network

During the run, every --interval seconds, one pass over every host reads by
sock_diag (bench/diagnosis/diagnosis_trace.py): each sender subflow's tcp_info,
each receiver subflow's, and both ends' MPTCP sockets (mptcp_info, socket
memory). After the warm-up, once: the dumps are cross-checked against
`ss -tinHM` in two hosts, and every subflow's path is read from the
routers' own forwarding decisions (`ip route get ... iif ... sport ...
dport ...`, hop by hop, bench/diagnosis/diagnosis_paths.py). Every host's MIB
counters (what `nstat -az` shows: /proc/PID/net/netstat and snmp of its
namespace) are read before and after the traffic. Cost, measured at
FatTree(4) (16 hosts): 0.04 s a pass, 2 % of one core at --interval 2; a
pass reads every host, so FatTree(8) should take about 8 times that
(--interval 5 keeps it near 6 % of one core; run.json's `event` and
diagnosis.json's trace_meta say what it cost).

Printed: the run's result, the sampler's cost, a table of candidate causes
(mean share over connections, a bound on the gap in points where the share
is of time, the rank correlation with the connections' shortfall, the share
among the 10 worst; bench/diagnosis/diagnosis_report.py says how each is measured),
path placement against independent uniform choices, the counters, goodput
and RTO share over time, and the 10 worst connections with their subflows.
Written into --out: diagnosis.json (all of it, and the inputs to redo the
analysis), trace.json.gz (every sample), and the Sweep's own run folder
under results/.

A cause can be taken away alone for a second run: --host-sysctl sets a
kernel setting in every host before the traffic (e.g.
net.ipv4.tcp_slow_start_after_idle=0, net.ipv4.tcp_wmem="4096 16384
33554432" for a larger send buffer, net.ipv4.tcp_rto_max_ms=N to bound the
RTO backoff, net.ipv4.tcp_notsent_lowat=N to bound what the scheduler
commits to one subflow, net.mptcp.stale_loss_cnt=4 for the kernel's
reinjection from stale subflows); --spread-paths opens each connection's
subflows from source ports chosen so that they cross distinct cores
(bench/diagnosis/diagnosis_placement.py). Ctrl-C: the Sweep's `with` removes the network and every
process of it. Exit status 0 whatever it measures, 1 if the run failed.
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import diagnosis_paths as dp  # noqa: E402
import diagnosis_report as dr  # noqa: E402
from diagnosis_trace import KernelTrace, TraceDuringRun, trace_record  # noqa: E402
from bench.cli import exit_timed  # noqa: E402

COUNTERS = ("MPTcpExtMPTCPRetrans", "MPTcpExtOFOQueue", "MPTcpExtOFOQueueTail", "MPTcpExtOFOMerge",
            "MPTcpExtRcvWndShared", "MPTcpExtRcvWndConflict", "MPTcpExtRcvWndConflictUpdate",
            "MPTcpExtDuplicateData", "MPTcpExtSubflowStale", "MPTcpExtRcvPruned", "MPTcpExtSndWndShared",
            "TcpExtTCPTimeouts", "TcpExtTCPLossProbes", "TcpExtTCPSpuriousRTOs", "TcpExtTCPSackRecovery",
            "TcpExtTCPOFOQueue", "TcpExtTCPRcvQDrop", "TcpExtTCPZeroWindowDrop", "TcpRetransSegs",
            "TcpOutSegs")


def host_counters(fabric) -> dict[str, dict[str, int]]:
    from kernel import transport
    return {h: {**transport.read_netstat(fabric.pid(h)), **transport.read_snmp(fabric.pid(h))}
            for h in fabric.hosts()}


def counter_deltas(before: dict, after: dict) -> dict[str, dict[str, int]]:
    from kernel.transport import counter_delta
    return {h: {k: v for k, v in counter_delta(before[h], after[h]).items() if v}
            for h in before if h in after}


def parse_sysctl(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.startswith("net."):
        raise argparse.ArgumentTypeError(f"{text!r}: expected net.KEY=VALUE")
    return key, value


def make_sweep(cfg, state: dict, interval_s: float, say, sysctls: dict[str, str], spread: bool):
    """A Sweep that traces the run it measures: the flows are learnt where
    it arms the path manager, and the trace rides its `during_runs` hook.
    `sysctls`: set in every host before the run (a cause removed);
    `spread`: subflows placed on distinct paths (diagnosis_placement)."""
    from experiments.fattree import Sweep
    from kernel import transport

    class DiagnosisSweep(Sweep):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            if spread:          # before the network starts: it attaches this one to every host
                from diagnosis_placement import PlacedPM
                self.net.pm = self.pm = PlacedPM()

        def arm_path_manager(self, flows, subflows):
            if sysctls:
                for h in self.fabric.hosts():
                    self.net.sysctl(h, sysctls)
                first = self.fabric.hosts()[0]
                state["sysctls"] = transport.read_sysctls(self.fabric.pid(first), tuple(sysctls))
                say(f"set in every host: {state['sysctls']}")
            if spread:
                from diagnosis_placement import spread_ports
                plan = spread_ports(self.fabric, flows, subflows, cfg.k)
                self.pm.ports = plan["ports"]
                state["spread"] = {"connections": len(plan["ports"]), "processes": plan["processes"],
                                   "errors": plan["errors"][:10],
                                   "distinct_planned": sorted(plan["distinct"].values())}
                say(f"placement: source ports chosen for {len(plan['ports'])} of {len(flows)} connections "
                    f"({plan['processes']} ip processes)")
            super().arm_path_manager(flows, subflows)
            walker = dp.PathWalker(self.fabric) if cfg.fabric == "l3" else None
            state.update(flows=flows, walker=walker, paths={}, before=host_counters(self.fabric))

            def walk(trace):
                if walker is None:
                    return
                todo = [t for t in trace.subflow_tuples() if t[1:] not in state["paths"]]
                state["paths"].update(walker.walk(todo))

            def after(trace):
                state["after"] = host_counters(self.fabric)
                if sys.exc_info()[0] is None:       # not while Ctrl-C unwinds
                    walk(trace)
            trace = KernelTrace({h: self.fabric.pid(h) for h in self.fabric.hosts()}, interval_s,
                                check_at_s=cfg.warmup, at_check=walk)
            trace.watch(flows)
            state["trace"] = trace
            self.during_runs = TraceDuringRun(trace, after_stop=after)

    return DiagnosisSweep(cfg, say=say)


def analyse(trace: dict, run: dict, paths: dict, counters: dict, k: int, warmup_s: float) -> dict:
    pct, delivered = {}, {}
    key_of = {(f["src_ip"], f["client_port"], f["dst_ip"], f["server_port"]): f["index"] for f in trace["flows"]}
    for fl in run["flows"]:
        i = key_of.get((fl["src_ip"], fl["client_port"], fl["dst_ip"], fl["server_port"]))
        if i is not None:
            pct[i] = fl["pct_optimal"]
            delivered[i] = dr.delivery(fl.get("per_second_mbps") or [], warmup_s, run["config"]["time_s"])
    conns = dr.per_connection(trace, warmup_s)
    placement = {}
    for c in conns:
        f = c["flow"]
        sub = [paths.get(f"{f['src_ip']}:{p}:{f['dst_ip']}:{f['server_port']}", []) for p in c["subflows"]]
        if any(sub):
            placement[f["index"]] = dp.connection_paths(sub, f["src"], f["dst"], k, _Roles())
            placement[f["index"]]["subflow_paths"] = sub
    totals: dict[str, int] = {}
    for per_host in counters.values():
        for name, v in per_host.items():
            totals[name] = totals.get(name, 0) + v
    for c in conns:
        i = c["flow"]["index"]
        c["pct_optimal"], c["paths"], c["delivery"] = pct.get(i), placement.get(i), delivered.get(i)
        c["counters"] = {"sender": {n: counters.get(c["flow"]["src"], {}).get(n, 0) for n in COUNTERS},
                         "receiver": {n: counters.get(c["flow"]["dst"], {}).get(n, 0) for n in COUNTERS}}
    worst = sorted((c for c in conns if c["pct_optimal"] is not None), key=lambda c: c["pct_optimal"])[:10]
    return {"causes": dr.causes_table(conns, pct, placement), "placement": dr.placement_summary(placement),
            "counters_total": {n: totals.get(n, 0) for n in COUNTERS}, "counters_all_total": totals,
            "over_time": dr.over_time(trace, run.get("baseline_mbps") or 0.0),
            "worst10": [c["flow"]["index"] for c in worst], "connections": conns}


class _Roles:
    """Node roles from FatTree names (h.., e.., a.., c..), enough for
    top_node() without the network (--reanalyse)."""
    ROLE = {"e": "edge", "a": "agg", "c": "core"}

    def isSwitch(self, node: str) -> bool:
        return node[:1] in self.ROLE

    def role(self, node: str) -> str:
        return self.ROLE.get(node[:1], "host")


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def report(result: dict, run: dict, trace: dict, walker_info: dict, inputs: dict) -> None:
    s, cfg = run["summary"], run["config"]
    gap = 100 - s["mean_pct"]
    print(f"\n=== FatTree({cfg['k']}) {cfg['workload']} MPTCP-{cfg['subflows']} at {cfg['bw_mbps']:g} Mb/s, "
          f"{cfg['queue_pkts']}-packet queues, {cfg['time_s']:g} s after {cfg['warmup_s']:g} s, cc {cfg['cc']}, "
          f"driver {cfg['driver']}, seed {cfg['seed']} ===")
    print(f"mean {s['mean_pct']:.1f} % of optimal (p10 {s['p10_pct']:.1f}, min {s['min_pct']:.1f}): "
          f"gap {gap:.1f} points; CPU {run.get('cpu_mean_pct')} %; last third {s.get('rise_pct')} % on the first; "
          f"flags: {', '.join(run['flags']) or '-'}")
    if inputs.get("host_sysctls_set") or inputs.get("spread_paths"):
        print(f"variant: host sysctls {inputs.get('host_sysctls_set') or '-'}; spread paths "
              f"{'yes' if inputs.get('spread_paths') else 'no'}")
    wall = trace.get("sampler_wall_s") or 0
    print(f"trace: {trace['passes']} passes every {trace['interval_s']:g} s, pass {trace['pass_s_mean']} s "
          f"mean / {trace['pass_s_max']} s max, sampler CPU {trace['sampler_cpu_s']} s "
          f"({100 * trace['sampler_cpu_s'] / wall if wall else 0:.1f} % of one core), "
          f"{trace['sampler_error_count']} sampling errors; fields missing: {trace['fields_missing'] or '-'}")
    ss = trace.get("ss_check") or {}
    print(f"ss cross-check at {ss.get('at_s')} s in {ss.get('hosts')}: {ss.get('fields_compared')} fields, "
          f"{ss.get('disagreement_count')} disagreements, {ss.get('fields_changed_between_ss_reads')} "
          f"changed between the two ss reads{'; errors: ' + str(ss['errors']) if ss.get('errors') else ''}")
    print(f"paths: {walker_info.get('processes')} ip processes, {len(walker_info.get('errors', []))} errors")
    print(f"\n{'cause':34s} {'mean':>7s} {'bound pts':>9s} {'rank corr':>9s} {'worst 10':>9s}   measure")
    for r in result["causes"]:
        show = _pct if r["unit"] == "%" else (lambda x: "-" if x is None else f"{x:.1f} s")
        print(f"{r['cause']:34s} {show(r['mean']):>7s} "
              f"{'-' if r['bound_pts'] is None else r['bound_pts']:>9} "
              f"{'-' if r['rank_corr_with_shortfall'] is None else r['rank_corr_with_shortfall']:>9} "
              f"{show(r['worst10_mean']):>9s}   {r['measure']}")
    p = result["placement"]
    if p.get("connections"):
        print(f"\nplacement ({p['connections']} connections, {p['complete']} with every subflow walked): "
              f"distinct top-tier switches {p['distinct_mean']} mean against {p['expected_mean']} for random "
              f"choices; below E[random] {100 * p['below_expected_share']:.1f} % of connections against "
              f"{100 * p['below_expected_share_random']:.1f} % expected; mean mid-rank {p['mid_rank_mean']} "
              f"(0.5 random); histogram {p['histogram']}")
    print("counters over the run, all hosts: " + ", ".join(
        f"{n.removeprefix('MPTcpExt').removeprefix('TcpExt')} {v}" for n, v in result["counters_total"].items()))
    print("over time: " + "; ".join(f"{b['from_s']:g}-{b['to_s']:g} s {b['pct_of_optimal']} % "
                                    f"(RTO {b['subflows_in_rto_pct']} %)" for b in result["over_time"]))
    by_index = {c["flow"]["index"]: c for c in result["connections"]}
    print("\nworst 10 connections:")
    for i in result["worst10"]:
        c = by_index[i]
        f, cs, pl = c["flow"], c["conn"], c["paths"] or {}
        subs = c["subflows"].values()
        time_s = sum(x["time"] for x in subs) or 1
        print(f"  {f['src']}->{f['dst']} {c['pct_optimal']:.1f} %: {len(c['subflows'])} subflows, distinct "
              f"{pl.get('distinct')}/{pl.get('expected_distinct') and round(pl['expected_distinct'], 2)} "
              f"{pl.get('tier', '')}; RTO {_pct(sum(x['rto'] for x in subs) / time_s)} %, idle-queued "
              f"{_pct(sum(x['idle_pending'] for x in subs) / time_s)} %, sndbuf full "
              f"{_pct(cs['sndbuf_full'] / cs['time'] if cs['time'] else None)} %, window-blocked "
              f"{_pct(cs['window_blocked'] / cs['time'] if cs['time'] else None)} %, rcvbuf >= 1/2 "
              f"{_pct(cs['pressure'] / cs['rcv_time'] if cs['rcv_time'] else None)} %, held "
              f"{cs['held_bytes_mean']} B mean ({cs['held_s']} s); MPTCP reinjected {cs['mptcp_bytes_retrans']} B")
        acked = sum(x["bytes_acked"] for x in subs) or 1
        tops = dict(zip(c["subflows"], pl.get("tops", [])))
        for port, x in c["subflows"].items():
            last = x["last"]
            print(f"      :{port} via {tops.get(port)} cwnd med {x['cwnd_median']} srtt med {x['srtt_ms_median']} ms, "
                  f"{x['rtos']} RTOs, RTO {_pct(x['rto'] / x['time'] if x['time'] else None)} %, backlog "
                  f"{x['backlog_s']} s, acked "
                  f"{100 * x['bytes_acked'] / acked:.0f} %; end: cwnd {last['cwnd']} ssthresh "
                  f"{last['ssthresh'] if last['ssthresh'] != 0x7FFFFFFF else 'inf'} backoff {last['backoff']} "
                  f"ca_state {last['ca_state']} rto {last['rto_us'] and last['rto_us'] // 1000} ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--subflows", type=int, default=8)
    ap.add_argument("--bw", type=float, default=0.5, help="link rate, Mb/s")
    ap.add_argument("--queue", type=int, default=100, help="packets")
    ap.add_argument("--time", type=float, default=None, help="counted seconds (default: the sweep's)")
    ap.add_argument("--warmup", type=float, default=None, help="seconds (default: the sweep's)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--interval", type=float, default=2.0, help="sampling period, s")
    ap.add_argument("--driver", default="iperf3")
    ap.add_argument("--cc", default=None, help="default: the sweep's (the machine's)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/k8_diagnosis"))
    ap.add_argument("--host-sysctl", type=parse_sysctl, action="append", default=[], metavar="net.KEY=VALUE",
                    help="set in every host before the run, e.g. net.ipv4.tcp_slow_start_after_idle=0 "
                         "(repeatable; a cause removed)")
    ap.add_argument("--spread-paths", action="store_true",
                    help="open each connection's subflows from source ports chosen to cross distinct "
                         "cores (bench/diagnosis/diagnosis_placement.py)")
    ap.add_argument("--reanalyse", type=Path, default=None, metavar="DIR",
                    help="redo the analysis from DIR's diagnosis.json and trace.json.gz")
    args = ap.parse_args()
    if args.reanalyse:
        return reanalyse(args.reanalyse)
    from experiments.config import LinkParams, SweepConfig
    cfg = SweepConfig(k=args.k, subflows=(args.subflows,), link=LinkParams(bw_mbps=args.bw, queue_pkts=args.queue),
                      time_s=args.time, warmup_s=args.warmup, seed=args.seed, driver=args.driver,
                      results=args.out / "results", **({"cc": args.cc} if args.cc else {}))
    cfg.validate()
    if args.subflows < 2:
        print("--subflows must be 2..8: the trace follows MPTCP connections", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    state: dict = {}
    print(f"FatTree({cfg.k}) MPTCP-{args.subflows} at {cfg.link.bw_mbps:g} Mb/s: {cfg.counted:g} s after "
          f"{cfg.warmup:g} s, sampling every {args.interval:g} s; out {args.out}", flush=True)
    sweep = make_sweep(cfg, state, args.interval, lambda m: print(f"    {m}", flush=True),
                       dict(args.host_sysctl), args.spread_paths)
    [path] = sweep.run()          # the runner's `with` builds and removes the network
    run = json.loads((path / "run.json").read_text())
    trace = trace_record(state["trace"])
    counters = counter_deltas(state["before"], state.get("after", state["before"]))
    paths = {":".join(map(str, k)): v for k, v in state["paths"].items()}
    walker = state.get("walker")
    walker_info = {"processes": walker.processes, "errors": walker.errors} if walker else {}
    with gzip.open(args.out / "trace.json.gz", "wt") as f:
        json.dump(trace, f)
    result = analyse(trace, run, paths, counters, cfg.k, cfg.warmup)
    inputs = {"run_dir": str(path), "paths": paths, "counters_per_host": counters, "walker": walker_info,
              "host_sysctls_set": state.get("sysctls"), "spread_paths": state.get("spread")}
    (args.out / "diagnosis.json").write_text(json.dumps(
        {"run": {k: run.get(k) for k in ("config", "summary", "flags", "cpu_mean_pct", "baseline_mbps",
                                         "kernel_counters", "event")},
         "trace_meta": {k: v for k, v in trace.items() if k not in ("snd_sub", "rcv_sub", "snd_conn", "rcv_conn")},
         **result, "inputs": inputs}, indent=1, default=str))
    report(result, run, trace, walker_info, inputs)
    print(f"\nwritten: {args.out / 'diagnosis.json'}, {args.out / 'trace.json.gz'}, run folder {path}")
    return 0


def reanalyse(out: Path) -> int:
    saved = json.loads((out / "diagnosis.json").read_text())
    with gzip.open(out / "trace.json.gz", "rt") as f:
        trace = json.load(f)
    run = json.loads((Path(saved["inputs"]["run_dir"]) / "run.json").read_text())
    inputs = saved["inputs"]
    result = analyse(trace, run, inputs["paths"], inputs["counters_per_host"], run["config"]["k"],
                     run["config"]["warmup_s"])
    report(result, run, trace, inputs["walker"], inputs)
    return 0


def main_or_failed() -> int:
    """main(), with a failed run as status 1."""
    try:
        return main()
    except Exception as exc:            # the sweep has cleaned up by now
        from experiments.runner import SweepError
        if not isinstance(exc, SweepError):
            raise
        print(f"run failed: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    exit_timed(main_or_failed, "interrupted; the sweep removed its network and processes")
