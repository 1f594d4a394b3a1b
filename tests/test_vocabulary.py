"""One name per meaning across every subcommand's options: each option of
every parser has its meaning here (a word its --help must carry), no
meaning has two names, and every old spelling a config declares is refused
in one line that names the new one. A new option adds its meaning here, or
takes the name that already has it."""
from __future__ import annotations

import pytest

from harness import cli

# option -> (its one meaning, a word every subcommand's --help of it carries)
VOCABULARY = {
    "-h": ("this help", "help"),
    "--seed": ("the seed of a run's random choices", "seed"),
    "--seeds": ("the experiment once per seed", "seed"),
    "--repeats": ("runs of a point, the same each time", "per"),
    "--cc": ("congestion control, or those compared", "congestion control"),
    "--schemes": ("the schemes compared (TCP, MPTCP and their variants)", "comma list"),
    "--k": ("FatTree arity, or those computed", "arit"),
    "--n": ("BCube's switch ports", "BCube"),
    "--levels": ("BCube's levels", "BCube"),
    "--bw": ("link rate", "rate"),
    "--local-bw": ("rate of a site's own link", "rate"),
    "--queue": ("queue length", "queue"),
    "--offload": ("TSO/GSO left on", "TSO"),
    "--queue-bytes": ("queues bounded in bytes", "bytes"),
    "--ack-lane": ("a queue for pure ACKs", "ACK"),
    "--sim-acks": ("pure ACKs through no queue, as the paper's simulator", "simulator"),
    "--host-nic": ("who shapes a host's egress on the model fabric", "egress"),
    "--random-drop": ("the simulator's random drops in the model fabric's queues", "drop"),
    "--delay": ("one-way link delay", "delay"),
    "--time": ("seconds counted", "seconds"),
    "--warmup": ("seconds before counting", "before"),
    "--samples": ("one-second samples per point", "samples"),
    "--fabric": ("the network's fabric", "l3"),
    "--driver": ("what sends the flows", "sends"),
    "--force": ("run past the capacity guard", "capacity guard"),
    "--recalibrate": ("the capacity guard's measure of this machine again", "forwarding cost"),
    "--workload": ("the FatTree sweep's traffic pattern", "one_to_one"),
    "--subflows": ("MPTCP's subflow count, or those compared", "subflow"),
    "--subflows-max": ("the model's largest subflow count", "subflows"),
    "--monitor-interval": ("seconds between monitor samples", "monitor"),
    "--schedule-interval": ("first fit's interval, or those compared", "first fit"),
    "--file-interval": ("mean seconds between a host's files", "files"),
    "--notsent-lowat": ("tcp_notsent_lowat", "notsent"),
    "--wmem-max": ("the largest send buffer", "send buffer"),
    "--servers": ("servers to spread the network over", "ssh"),
    "--topo": ("a user's own topology, a Mininet Topo in a file", "Mininet Topo"),
    "--matrix": ("the flows from a user's CSV file", "CSV"),
    "--ssh-config": ("ssh's configuration", "ssh"),
    "--sweeps": ("which sweeps run", "comma list"),
    "--buffers": ("receive buffers of the buffer sweep", "receive buffer"),
    "--buffer": ("receive buffer outside the buffer sweep", "receive buffer"),
    "--losses": ("loss rates of the loss sweep", "loss"),
    "--rtts": ("RTTs of the RTT sweep", "RTT"),
    "--factor": ("a slowed link's share of its rate", "share of its rate"),
    "--hosts-per-rack": ("hosts per rack", "hosts"),
    "--ratio": ("oversubscription", "oversubscription"),
    "--localities": ("rack-local shares of the locality sweep", "local"),
    "--loads": ("connections per host of the load sweep", "load sweep"),
    "--matrices": ("traffic matrices of the load sweep", "permutation"),
    "--topologies": ("topologies compared", "fattree"),
    "--sizes": ("file sizes in packets", "packets"),
    "--long-share": ("share of hosts with a long flow", "long flow"),
    "--file-bytes": ("one short file's size", "file size"),
    "--file-cdf": ("short files' sizes from a CDF", "CDF"),
    "--file-mb": ("a sender's file", "file"),
    "--dilation": ("time stretched", "stretch"),
    "--switches": ("switches between two hosts", "switches"),
    "--senders": ("senders", "senders"),
    "--receivers": ("receivers", "receivers"),
    "--order": ("the order of MPTCP's paths", "order"),
    "--paths": ("the provisioned paths", "paths"),
    "--model": ("the flow-level model's equilibria", "model"),
    "--results": ("results folder", "results"),
    "--no-plots": ("no figures", "figures"),
    "--plan": ("the plan, nothing built", "capacity"),
    "--shard": ("a share of the points", "share"),
    "--validate-only": ("run_mptcp.sh's input check", ""),
    "--cli": ("a prompt on the network", "prompt"),
    "--hold": ("the network kept up", "network"),
    "--pcap": ("packets captured", "capture"),
}


def options() -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(subcommand, option, its help, its other spellings) of every parser."""
    out = []
    for name, command in cli.commands().items():
        for action in command.parser()._actions if name else ():
            if action.option_strings:
                first, *others = action.option_strings
                out.append((name, first, action.help or "", tuple(others)))
    return out


def test_every_option_has_one_meaning_and_each_meaning_one_name():
    meanings = [meaning for meaning, _ in VOCABULARY.values()]
    assert len(set(meanings)) == len(meanings), "a meaning with two names in VOCABULARY"
    unknown = [f"{name} {flag}" for name, flag, _, _ in options() if flag not in VOCABULARY]
    assert not unknown, f"a meaning not in VOCABULARY, or a second name for one: {unknown}"
    unsaid = [f"{name} {flag}: {VOCABULARY[flag][0]!r}" for name, flag, help_text, _ in options()
              if VOCABULARY[flag][1] not in help_text]
    assert not unsaid, f"options whose --help does not say their meaning: {unsaid}"


def old_spellings() -> list[tuple[str, str, str]]:
    """(subcommand, old spelling, new) of every option that declares one."""
    out = []
    for name, flag, _, others in options():
        out += [(name, old, flag) for old in others if old not in ("--help",)]
    return out


def test_old_spellings_are_the_ones_renamed():
    assert {(n, o) for n, o, _ in old_spellings()} >= {
        ("algorithms", "--schemes"), ("hotspot", "--schemes"), ("shortflows", "--schemes"),
        ("manytoone", "--schemes"), ("hotspot", "--hot-factor"), ("manytoone", "--k"),
        ("provisioned", "--settle"), ("scheduling", "--intervals"), ("shortflows", "--interval")}


@pytest.mark.parametrize("name,old,new", old_spellings())
def test_an_old_spelling_is_refused_in_one_line_naming_the_new(name, old, new, capsys):
    assert cli.main(["--validate-only", name, old, "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"run_mptcp.sh: error: {old} is now {new}"]
