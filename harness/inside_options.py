"""The options for looking inside a network (`--cli`, `--hold`, `--pcap`),
which every experiment that builds one takes, and their checks before
anything is built (experiments/inside.py does the rest). Standard library
only, as shared_options.py."""
from __future__ import annotations

import argparse
import re

from base.errors import ConfigError
from dctopo.fattree_shape import FatTreeShape

# Every topology of the catalogue names its hosts h and their numbers (h0_0_0,
# h1, h0_1); `all` also takes the cross-traffic hosts of the path topologies
# (x1, x2). A topology of the user's own (--topo) names them as it likes:
# the runner checks those names against it, before it is built.
HOST_NAME = re.compile(r"^h[0-9]+(_[0-9]+)*$")
ANY_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")


def add_inside_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cli", nargs="?", const="before", choices=("before", "after"), default=None,
                   help="a Mininet-style prompt on the network (`help` lists its words): once it "
                        "is built, open while its runs go on (the first network, where there are "
                        "several); `--cli after`: after the last run. "
                        "The network stays up until the prompt is left (exit, Ctrl-D); leaving it "
                        "during the runs stops the experiment. Not with --shard or --servers")
    p.add_argument("--hold", action="store_true",
                   help="build the network, run nothing and keep it up until Ctrl-C or SIGTERM; "
                        "meanwhile `run_mptcp.sh exec NODE -- CMD` runs CMD in a node")
    p.add_argument("--pcap", default=None, metavar="HOSTS",
                   help="capture the packets of these hosts (all, or a comma list of the "
                        "topology's host names, e.g. h0_0_0,h0_0_1) in every run, into the "
                        "run's folder (pcap/INTERFACE.pcap, e.g. h0_0_0-eth0.pcap); the runs are "
                        "flagged packet_capture")


def pcap_hosts(text: str | None, own_topology: bool = False) -> tuple[str, ...] | None:
    """("all",), the hosts named, or None; ConfigError for an empty list.
    `own_topology`: a --topo's host names may be any names."""
    if text is None:
        return None
    hosts = tuple(h.strip() for h in text.split(","))
    if not text.strip() or not all(hosts):
        raise ConfigError(f"--pcap {text!r}: name hosts, e.g. --pcap h0_0_0,h0_0_1, or --pcap all")
    bad = [h for h in hosts if h != "all" and not (ANY_NAME if own_topology else HOST_NAME).match(h)]
    if bad:
        raise ConfigError(f"--pcap: {bad[0]!r} is not a host's name (h and its numbers, "
                          "e.g. h0_0_0), nor all")
    return ("all",) if "all" in hosts else hosts


def check(name: str, machine: bool, cfg, args) -> None:
    """Refuse what cannot be looked inside, in one line."""
    asked = [flag for flag, on in (("--cli", args.cli), ("--hold", args.hold),
                                   ("--pcap", args.pcap is not None)) if on]
    if not asked:
        return
    if not machine:
        raise ConfigError(f"{asked[0]}: {name} computes without a network; there is nothing to look inside")
    own_topology = bool(getattr(cfg, "topo", None))
    hosts = pcap_hosts(args.pcap, own_topology)
    if hosts and hosts != ("all",) and name == "fattree" and not own_topology:
        known = FatTreeShape(cfg.k).hosts()
        missing = [h for h in hosts if h not in known]
        if missing:
            raise ConfigError(f"--pcap: FatTree({cfg.k}) has no host {', '.join(missing)} "
                              f"(its hosts: {known[0]} .. {known[-1]})")
    if args.cli and args.hold:
        raise ConfigError("--cli and --hold: give one (--hold keeps the network up with no prompt)")
    if args.hold and args.pcap is not None:
        raise ConfigError("--pcap captures runs, and --hold runs none")
    if args.cli and getattr(args, "shard", None):
        raise ConfigError("--cli with --shard: a prompt is for one network on one machine; "
                          "run the shard without it, or --cli without --shard")
    if getattr(cfg, "servers", ()) and (args.cli or args.pcap is not None or args.hold):
        raise ConfigError(f"{asked[0]} with --servers: the nodes are on other servers; "
                          "look inside a network built on this machine")
