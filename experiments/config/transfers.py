"""The distributed-transfer experiment's config (CS536 '13 in README's
sources): files from senders to receivers, timed until every receiver has
its data, on two hosts over N switches and on FatTree(4)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from base import records
from base.errors import ConfigError
from experiments.config.common import MAX_SUBFLOWS, TransferSettings, check_choices

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

    def run_dir(self, results: Path) -> Path:
        return records.transfers_run(results, self.sweep, self.label, self.subflows)


@dataclass(frozen=True)
class TransfersConfig(TransferSettings):
    """Everything `run_mptcp.sh transfers` was asked to do."""
    sweeps: tuple[str, ...] = TRANSFERS_SWEEPS
    switches: tuple[int, ...] = (2, 3, 4, 5)     # nswitch: subflows run 1..N on each
    senders: tuple[int, ...] = (1, 4, 8)         # fattree
    receivers: tuple[int, ...] = (1, 4, 8)
    subflows: tuple[int, ...] = (1, 2, 4)        # fattree
    # Each sender's file, split evenly among the receivers (CS536 '13: 50 MB
    # on links Mininet left unshaped; here 10 MB at 10 Mb/s, 8.4 s for one
    # TCP flow alone).
    file_mb: float = 10.0

    def validate(self) -> None:
        self.check_settings()
        check_choices("--sweeps", "sweep", self.sweeps, TRANSFERS_SWEEPS)
        for flag, values, low, high in (("--switches", self.switches, 1, MAX_SWITCHES),
                                        ("--senders", self.senders, 1, FATTREE_SIDE),
                                        ("--receivers", self.receivers, 1, FATTREE_SIDE),
                                        ("--subflows", self.subflows, 1, MAX_SUBFLOWS)):
            if not values:
                raise ConfigError(f"{flag}: give at least one value")
            for v in values:
                if not low <= v <= high:
                    raise ConfigError(f"{flag} {v}: must be within {low}..{high}")
        if not 0.001 <= self.file_mb <= 1000:
            raise ConfigError(f"--file-mb {self.file_mb}: must be within 0.001..1000")

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
