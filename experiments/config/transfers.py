"""The distributed-transfer experiment's config (CS536 '13 in README's
sources): files from senders to receivers, timed until every receiver has
its data, on two hosts over N switches and on FatTree(4)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from base import records
from base.links import LinkParams
from base.options import links, names, option
from experiments.config.common import MAX_SUBFLOWS, Settings, check_lists_given

TRANSFERS_SWEEPS = ("nswitch", "fattree")
MAX_SWITCHES = 8
FATTREE_SIDE = 8            # hosts in pods 0 and 2 (senders), and in pods 1 and 3 (receivers)


@dataclass(frozen=True)
class TransfersPoint:
    sweep: str              # nswitch or fattree
    subflows: int           # 1 = TCP
    switches: int = 0       # nswitch: the paths between the two hosts
    senders: int = 0        # fattree
    receivers: int = 0

    @property
    def label(self) -> str:
        return f"n{self.switches}" if self.sweep == "nswitch" else f"s{self.senders}-r{self.receivers}"

    def plan_text(self) -> str:
        where = (f"{self.switches} switches" if self.sweep == "nswitch"
                 else f"{self.senders} senders to {self.receivers} receivers")
        return f"{self.sweep}: {where}, subflows {self.subflows}"

    def run_dir(self, results: Path) -> Path:
        return records.transfers_run(results, self.sweep, self.label, self.subflows)


@dataclass(frozen=True)
class TransfersConfig(Settings):
    """Distributed file transfers (CS536 '13): time until every receiver has
    its data, TCP against MPTCP, on N switches and FatTree(4)."""
    sweeps: tuple[str, ...] = names(TRANSFERS_SWEEPS, flag="--sweeps", what="sweep")
    switches: tuple[int, ...] = option((2, 3, 4, 5), flag="--switches", low=1, high=MAX_SWITCHES,
                                       help="nswitch: switches between the two hosts; subflows run "
                                            "1..N on each")
    senders: tuple[int, ...] = option((1, 4, 8), flag="--senders", low=1, high=FATTREE_SIDE,
                                      help="fattree: senders, from pods 0 and 2")
    receivers: tuple[int, ...] = option((1, 4, 8), flag="--receivers", low=1, high=FATTREE_SIDE,
                                        help="fattree: receivers, from pods 1 and 3")
    subflows: tuple[int, ...] = option((1, 2, 4), flag="--subflows", low=1, high=MAX_SUBFLOWS,
                                       help="fattree: subflow counts, 1 = TCP")
    # Each sender's file, split evenly among the receivers (CS536 '13: 50 MB
    # on links Mininet left unshaped; here 10 MB at 10 Mb/s, 8.4 s for one
    # TCP flow alone).
    file_mb: float = option(10.0, flag="--file-mb", metavar="MB", low=0.001, high=1000.0,
                            help="each sender's file in MB, split among the receivers")
    link: LinkParams = links("bw_mbps", "queue_pkts", factory=LinkParams)

    def validate(self) -> None:
        self.check_settings()
        check_lists_given(self.sweeps, ("nswitch", "--switches", self.switches),
                          ("fattree", "--senders", self.senders), ("fattree", "--receivers", self.receivers),
                          ("fattree", "--subflows", self.subflows))

    @property
    def file_bytes(self) -> int:
        return round(self.file_mb * 1e6)

    def points(self) -> list[TransfersPoint]:
        """N-switch points by N (a network each), subflows 1..N; then the
        FatTree points on one network."""
        out = []
        if "nswitch" in self.sweeps:
            out += [TransfersPoint("nswitch", s, switches=n) for n in self.switches
                    for s in range(1, n + 1)]
        if "fattree" in self.sweeps:
            out += [TransfersPoint("fattree", s, senders=ns, receivers=nr) for ns in self.senders
                    for nr in self.receivers for s in self.subflows]
        return out
