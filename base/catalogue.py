"""The experiments, one row each: everything else that names an experiment
(the command line and its help, the input check, the records' globs, the
figures and report, `run_mptcp.sh list`, `--plan`, the README's table) is
derived from these rows. Standard library only, and nothing is imported
from a row until it is used: `--help` and `list` stay light.

Adding an experiment: its own files (config, experiment, figure) and one row
here. A row from outside the repository can be added without editing this
file: MPTCP_HARNESS_EXPERIMENTS names modules (comma list) that each define
`ROW` (or `ROWS`), e.g. a researcher's own experiment, or the tests' toy.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass

EXTRA_ENV = "MPTCP_HARNESS_EXPERIMENTS"

# The studies the experiments reproduce, by public address.
SOURCES = {
    "sigcomm11": ("Raiciu et al., Improving Datacenter Performance and Robustness with "
                  "Multipath TCP, SIGCOMM 2011", "https://doi.org/10.1145/2018436.2018467"),
    "cs244-13": ("CS244 '13: Improving datacenter performance and robustness with multipath TCP "
                 "(a Mininet reproduction)",
                 "http://reproducingnetworkresearch.wordpress.com/2013/03/13/cs244-13-improving-"
                 "datacenter-performance-and-robustness-with-multipath-tcp/"),
    "cs244-14": ("CS244 '14: Examining the Impact of Receive Buffer Size on MPTCP (after Raiciu "
                 "et al., NSDI 2012, Fig. 4)", ""),
    "cs536-13": ("Reese and Ortiz, CS536 final project, distributed file transfers, 2013", ""),
    "tnc13": ("van der Pol et al., Experiences with MPTCP in an intercontinental OpenFlow "
              "network, TNC 2013", ""),
}


@dataclass(frozen=True)
class Row:
    """One experiment. Dotted paths are "module:attribute", imported on use.

    config:      its config class, whose fields declare its options: the
                 parser and `argv -> (config, args)` are made from it
                 (harness/declared.py), standard library only;
    run:         an experiments.runner.Experiment subclass, or a function
                 cfg -> None for one that runs no network (`machine=False`);
    figure:      a module with draw_all(results, plots) and report_lines(results);
    traffic:     (cfg, point) -> seconds of traffic that point runs, or None
                 where only the run tells (closed loops, transfers).
    """
    name: str
    purpose: str
    reproduces: str                 # the paper's figure or study
    source: str                     # a key of SOURCES
    config: str
    run: str
    records: tuple[str, ...]        # globs of its run.json below a results folder
    layout: str                     # where its runs go, for the docs
    figure: str
    traffic: str = "experiments.plan:long_flow_traffic"
    machine: bool = True            # builds networks: root, the lock, the preflight
    delay: bool = False             # its links have delay or loss
    usage: str = ""                 # how it is typed, where not `NAME [options]`
    # A parser and `argv -> (config, args)` of its own, instead of the ones
    # made from `config` (the FatTree sweep's: its --help is the main one).
    parser: str = ""
    config_from: str = ""
    # The numbers of a run.json its baseline is compared on, as dotted keys
    # ("summary.mean_pct"); a key ending in "pct" is in points, others relative.
    headline: tuple[str, ...] = ()

    def load(self, attribute: str):
        """The object one of this row's dotted paths names."""
        module, _, name = getattr(self, attribute).partition(":")
        return getattr(importlib.import_module(module), name)

    @property
    def command(self) -> str:
        return self.usage or f"{self.name} [options]"


RECORD = "run.json"


def experiment(name: str, purpose: str, reproduces: str, config: str, run: str,
               records: str | tuple[str, ...], layout: str, source: str = "sigcomm11", **more) -> Row:
    """A row whose parts are where they usually are: its config class in
    experiments/config/NAME.py (or "module:Class" there), `run` in
    experiments/NAME.py (unless a dotted path), figures/NAME.py, and its
    records' glob (or globs) below a results folder."""
    globs = (records,) if isinstance(records, str) else records
    return Row(name, purpose, reproduces, source,
               config=f"experiments.config.{config if ':' in config else f'{name}:{config}'}",
               run=run if ":" in run else f"experiments.{name}:{run}",
               records=tuple(f"{g}/{RECORD}" for g in globs), layout=layout,
               **{"figure": f"figures.{name}", **more})


SWEEP_HEADLINE = ("summary.mean_pct", "summary.p10_pct", "cpu_mean_pct")
RACK_HEADLINE = ("pct_of_host_links", "mean_flow_mbps", "cpu_mean_pct")
NO_NETWORK = {"traffic": "experiments.plan:no_traffic", "machine": False}

ROWS: dict[str, Row] = {row.name: row for row in (
    experiment("fattree", "TCP against MPTCP with 1..8 subflows on FatTree(k), per workload",
               "Fig. 2-3; CS244 '13 Fig. 2-12", "SweepConfig", "FatTreeExperiment",
               ("*/*/*", "ft*/*/seed*/*"),
               "ft<k>/<workload>/[seed<S>/]flows<N>/", usage="K [WORKLOAD] [options]",
               parser="harness.options:fattree_parser",
               config_from="harness.options:fattree_config_from_args",
               headline=SWEEP_HEADLINE + ("summary.min_pct",),
               figure="plot"),   # plot.py draws the sweep's figures itself
    experiment("wifi3g", "WiFi + 3G: goodput against receive buffer, WiFi loss and RTT",
               "NSDI 2012 Fig. 4 (CS244 '14)", "Wifi3GConfig", "Wifi3GExperiment", "wifi3g/*/*/*",
               "wifi3g/<sweep>/<scheme>/<x>/", source="cs244-14",
               traffic="experiments.plan:sampled_traffic", delay=True, headline=("goodput_mbps",)),
    experiment("algorithms", "congestion controls compared on FatTree one_to_one", "Fig. 9-10",
               "AlgorithmsConfig",
               "experiments.algorithms:CcCompareExperiment", "algorithms*/*/ft*/one_to_one/flows*",
               "algorithms<k>/<scheme>/ft<k>/one_to_one/flows<N>/",
               headline=SWEEP_HEADLINE),
    experiment("hotspot", "a core link at a tenth of its rate mid-run, per congestion control",
               "Fig. 11", "algorithms:HotspotConfig", "experiments.algorithms:CcCompareExperiment",
               "hotspot*/*/ft*/one_to_one/flows*", "hotspot<k>/<scheme>/ft<k>/one_to_one/flows<N>/",
               figure="figures.algorithms", headline=SWEEP_HEADLINE),
    experiment("dhft", "dual-homed FatTree: throughput against locality and load", "Fig. 14-16, 18",
               "DhftConfig", "DhftExperiment", "dhft*/*/*/*", "dhft<k>[-seed<S>]/<sweep>/<scheme>/<x>/",
               headline=RACK_HEADLINE),
    experiment("linkfailure", "a DHFT core link at a tenth of its rate mid-run, TCP against MPTCP",
               "Fig. 19", "LinkFailureConfig", "LinkFailureExperiment", "linkfailure*/*",
               "linkfailure<k>-<fabric>/<scheme>/",
               headline=("hot_link.aggregate_kept", "pct_of_host_links")),
    experiment("oversub", "4:1 oversubscribed FatTree: MPTCP's gain over TCP against load and "
               "locality", "Fig. 7-8", "OversubConfig", "OversubExperiment", "oversub*/*/*/*/*",
               "oversub<k>[-seed<S>]/<sweep>/<matrix>/<scheme>/<x>/",
               headline=RACK_HEADLINE),
    experiment("topologies", "FatTree, VL2 and BCube under a permutation, TCP against MPTCP",
               "Fig. 4-5", "TopologiesConfig", "TopologiesExperiment",
               ("topologies/*/*/*", "topologies-seed*/*/*/*"),
               "topologies[-seed<S>]/<topology>/permutation/flows<N>/",
               headline=RACK_HEADLINE),
    experiment("manytoone", "BCube many-to-one: every host reads from its neighbours",
               "§4.3.1 (BCube table)", "ManyToOneConfig", "ManyToOneExperiment", "manytoone/*/*/reads",
               "manytoone/bcube<n>-<k>/<scheme>/reads/", headline=("read_pct_of_max", "cpu_mean_pct")),
    experiment("filesize", "time to open a connection and move one file, TCP against MPTCP",
               "Fig. 17", "FilesizeConfig", "FilesizeExperiment", "filesize/*/*/*",
               "filesize/<link>/<scheme>/<size>pkts/",
               traffic="experiments.plan:unknown_traffic", delay=True, headline=("median_ms", "p90_ms")),
    experiment("shortflows", "short files by TCP beside long flows of each scheme", "Fig. 12",
               "ShortflowsConfig", "ShortflowsExperiment", "shortflows*/*", "shortflows<k>/<scheme>/",
               headline=("mean_flow_mbps", "short.median_ms", "cpu_mean_pct")),
    experiment("scheduling", "Hedera's first fit against TCP over ECMP and MPTCP, closed-loop flows",
               "Fig. 13", "SchedulingConfig", "SchedulingExperiment", "scheduling*/*",
               "scheduling<k>[-x<F>]/<scheme>[-<interval>s]/", headline=("pct_of_optimal", "cpu_mean_pct")),
    experiment("transfers", "distributed file transfers: time until every receiver has its data",
               "CS536 '13 Fig. 1, A.1-A.7", "TransfersConfig", "TransfersExperiment", "transfers/*/*/*",
               "transfers/<nswitch or fattree>/<label>/flows<N>/", source="cs536-13",
               traffic="experiments.plan:unknown_traffic", headline=("completion_s", "cpu_mean_pct")),
    experiment("provisioned", "MPTCP over four provisioned paths, two link-disjoint, on long links",
               "TNC 2013 Fig. 7, 8, 10", "ProvisionedConfig", "ProvisionedExperiment", "provisioned-*/*",
               "provisioned-<fabric>[-<variant>]/<scheme>/", source="tnc13", delay=True,
               headline=("goodput_mbps", "disjoint_share")),
    experiment("model", "the subflow model's load variance against subflows, computed", "Fig. 6",
               "ModelConfig", "write_model", "model", "model/", **NO_NETWORK),
    experiment("flowlevel", "TCP against MPTCP-m on FatTree(k) up to 8192 hosts, a flow-level model",
               "Fig. 2-3 (flow-level, 8192-host panel)", "FlowLevelConfig", "write_flowlevel",
               "flowlevel/ft*", "flowlevel/ft<k>/", **NO_NETWORK),
)}


def _extra_rows() -> dict[str, Row]:
    """Rows of the modules MPTCP_HARNESS_EXPERIMENTS names."""
    rows: dict[str, Row] = {}
    for module in filter(None, (m.strip() for m in os.environ.get(EXTRA_ENV, "").split(","))):
        mod = importlib.import_module(module)
        for row in getattr(mod, "ROWS", ()) or (getattr(mod, "ROW"),):
            rows[row.name] = row
    return rows


def rows() -> dict[str, Row]:
    """Every experiment: the repository's, then any MPTCP_HARNESS_EXPERIMENTS adds."""
    return {**ROWS, **_extra_rows()}


def row(name: str) -> Row:
    return rows()[name]
