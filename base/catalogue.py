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

    config_from: argv -> (config, parsed args), standard library only;
    parser:      () -> its argparse parser (for --help and the option table);
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
    config_from: str
    parser: str
    run: str
    records: tuple[str, ...]        # globs of its run.json below a results folder
    layout: str                     # where its runs go, for the docs
    figure: str
    traffic: str = "experiments.plan:long_flow_traffic"
    machine: bool = True            # builds networks: root, the lock, the preflight
    delay: bool = False             # its links have delay or loss
    usage: str = ""                 # how it is typed, where not `NAME [options]`

    def load(self, attribute: str):
        """The object one of this row's dotted paths names."""
        module, _, name = getattr(self, attribute).partition(":")
        return getattr(importlib.import_module(module), name)

    @property
    def command(self) -> str:
        return self.usage or f"{self.name} [options]"


RECORD = "run.json"
_OPTIONS = "harness.options"

ROWS: dict[str, Row] = {row.name: row for row in (
    Row("fattree", "TCP against MPTCP with 1..8 subflows on FatTree(k), per workload",
        "Fig. 2-3; CS244 '13 Fig. 2-12", "sigcomm11",
        f"{_OPTIONS}:config_from_args", f"{_OPTIONS}:parser", "experiments.fattree:FatTreeExperiment",
        (f"*/*/*/{RECORD}",), "ft<k>/<workload>/flows<N>/", "figures.fattree",
        usage="K [WORKLOAD] [options]"),
    Row("wifi3g", "WiFi + 3G: goodput against receive buffer, WiFi loss and RTT",
        "NSDI 2012 Fig. 4 (CS244 '14)", "cs244-14",
        f"{_OPTIONS}:wifi3g_config_from_args", f"{_OPTIONS}:wifi3g_parser",
        "experiments.wifi3g:Wifi3GExperiment", (f"wifi3g/*/*/*/{RECORD}",),
        "wifi3g/<sweep>/<scheme>/<x>/", "figures.wifi3g",
        traffic="experiments.plan:sampled_traffic", delay=True),
    Row("algorithms", "congestion controls compared on FatTree one_to_one",
        "Fig. 9-10", "sigcomm11",
        f"{_OPTIONS}:algorithms_config_from_args", f"{_OPTIONS}:algorithms_parser",
        "experiments.algorithms:CcCompareExperiment",
        (f"algorithms*/*/ft*/one_to_one/flows*/{RECORD}",),
        "algorithms<k>/<scheme>/ft<k>/one_to_one/flows<N>/", "figures.algorithms"),
    Row("hotspot", "a core link at a tenth of its rate mid-run, per congestion control",
        "Fig. 11", "sigcomm11",
        f"{_OPTIONS}:hotspot_config_from_args", f"{_OPTIONS}:hotspot_parser",
        "experiments.algorithms:CcCompareExperiment",
        (f"hotspot*/*/ft*/one_to_one/flows*/{RECORD}",),
        "hotspot<k>/<scheme>/ft<k>/one_to_one/flows<N>/", "figures.algorithms"),
    Row("dhft", "dual-homed FatTree: throughput against locality and load",
        "Fig. 14-16, 18", "sigcomm11",
        f"{_OPTIONS}:dhft_config_from_args", f"{_OPTIONS}:dhft_parser",
        "experiments.dhft:DhftExperiment", (f"dhft*/*/*/*/{RECORD}",),
        "dhft<k>/<sweep>/<scheme>/<x>/", "figures.dhft"),
    Row("linkfailure", "a DHFT core link at a tenth of its rate mid-run, TCP against MPTCP",
        "Fig. 19", "sigcomm11",
        f"{_OPTIONS}:linkfailure_config_from_args", f"{_OPTIONS}:linkfailure_parser",
        "experiments.linkfailure:LinkFailureExperiment", (f"linkfailure*/*/{RECORD}",),
        "linkfailure<k>-<fabric>/<scheme>/", "figures.linkfailure"),
    Row("oversub", "4:1 oversubscribed FatTree: MPTCP's gain over TCP against load and locality",
        "Fig. 7-8", "sigcomm11",
        f"{_OPTIONS}:oversub_config_from_args", f"{_OPTIONS}:oversub_parser",
        "experiments.oversub:OversubExperiment", (f"oversub*/*/*/*/*/{RECORD}",),
        "oversub<k>/<sweep>/<matrix>/<scheme>/<x>/", "figures.oversub"),
    Row("topologies", "FatTree, VL2 and BCube under a permutation, TCP against MPTCP",
        "Fig. 4-5", "sigcomm11",
        f"{_OPTIONS}:topologies_config_from_args", f"{_OPTIONS}:topologies_parser",
        "experiments.topologies:TopologiesExperiment", (f"topologies/*/*/*/{RECORD}",),
        "topologies/<topology>/permutation/flows<N>/", "figures.topologies"),
    Row("manytoone", "BCube many-to-one: every host reads from its neighbours",
        "§4.3.1 (BCube table)", "sigcomm11",
        f"{_OPTIONS}:manytoone_config_from_args", f"{_OPTIONS}:manytoone_parser",
        "experiments.manytoone:ManyToOneExperiment", (f"manytoone/*/*/reads/{RECORD}",),
        "manytoone/bcube<n>-<k>/<scheme>/reads/", "figures.manytoone"),
    Row("filesize", "time to open a connection and move one file, TCP against MPTCP",
        "Fig. 17", "sigcomm11",
        f"{_OPTIONS}:filesize_config_from_args", f"{_OPTIONS}:filesize_parser",
        "experiments.filesize:FilesizeExperiment", (f"filesize/*/*/*/{RECORD}",),
        "filesize/<link>/<scheme>/<size>pkts/", "figures.filesize",
        traffic="experiments.plan:unknown_traffic", delay=True),
    Row("shortflows", "short files by TCP beside long flows of each scheme",
        "Fig. 12", "sigcomm11",
        f"{_OPTIONS}:shortflows_config_from_args", f"{_OPTIONS}:shortflows_parser",
        "experiments.shortflows:ShortflowsExperiment", (f"shortflows*/*/{RECORD}",),
        "shortflows<k>/<scheme>/", "figures.shortflows"),
    Row("scheduling", "Hedera's first fit against TCP over ECMP and MPTCP, closed-loop flows",
        "Fig. 13", "sigcomm11",
        f"{_OPTIONS}:scheduling_config_from_args", f"{_OPTIONS}:scheduling_parser",
        "experiments.scheduling:SchedulingExperiment", (f"scheduling*/*/{RECORD}",),
        "scheduling<k>[-x<F>]/<scheme>[-<interval>s]/", "figures.scheduling"),
    Row("transfers", "distributed file transfers: time until every receiver has its data",
        "CS536 '13 Fig. 1, A.1-A.7", "cs536-13",
        f"{_OPTIONS}:transfers_config_from_args", f"{_OPTIONS}:transfers_parser",
        "experiments.transfers:TransfersExperiment", (f"transfers/*/*/*/{RECORD}",),
        "transfers/<nswitch|fattree>/<label>/flows<N>/", "figures.transfers",
        traffic="experiments.plan:unknown_traffic"),
    Row("provisioned", "MPTCP over four provisioned paths, two link-disjoint, on long links",
        "TNC 2013 Fig. 7, 8, 10", "tnc13",
        f"{_OPTIONS}:provisioned_config_from_args", f"{_OPTIONS}:provisioned_parser",
        "experiments.provisioned:ProvisionedExperiment", (f"provisioned-*/*/{RECORD}",),
        "provisioned-<fabric>[-<variant>]/<scheme>/", "figures.provisioned", delay=True),
    Row("model", "the subflow model's load variance against subflows, computed",
        "Fig. 6", "sigcomm11",
        f"{_OPTIONS}:model_config_from_args", f"{_OPTIONS}:model_parser",
        "experiments.model:write_model", (f"model/{RECORD}",), "model/", "figures.model",
        traffic="experiments.plan:no_traffic", machine=False),
    Row("flowlevel", "TCP against MPTCP-m on FatTree(k) up to 8192 hosts, a flow-level model",
        "Fig. 2-3 (flow-level, 8192-host panel)", "sigcomm11",
        f"{_OPTIONS}:flowlevel_config_from_args", f"{_OPTIONS}:flowlevel_parser",
        "experiments.flowlevel:write_flowlevel", (f"flowlevel/ft*/{RECORD}",), "flowlevel/ft<k>/",
        "figures.flowlevel", traffic="experiments.plan:no_traffic", machine=False),
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


def records_glob(name: str) -> str:
    """The (first) glob of an experiment's run.json files below a results folder."""
    return ROWS[name].records[0]
