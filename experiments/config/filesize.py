"""The file-size experiment's config (paper Fig. 17): the time to open a
connection and move one file, TCP against MPTCP, over file sizes."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from base import records
from base.errors import ConfigError
from base.links import LinkParams
from experiments.config.common import TransferSettings, check_choices

FILESIZE_SCHEMES = ("tcp", "mptcp")
# A "packet" of a file is one full segment's payload (1448 bytes with TCP
# timestamps in a 1514-byte frame), as the paper counts file sizes.
PACKET_BYTES = 1448
MAX_SIZE_PKTS = 100_000


@dataclass(frozen=True)
class FilesizePoint:
    scheme: str         # tcp or mptcp
    size_pkts: int

    def run_dir(self, results: Path, link: LinkParams) -> Path:
        return records.filesize_run(results, link_label(link), self.scheme, self.size_pkts)


def link_label(link: LinkParams) -> str:
    """A folder name for the links a set of runs had: "100mbps-0ms"."""
    return f"{link.bw_mbps:g}mbps-{link.delay_ms:g}ms"


@dataclass(frozen=True)
class FilesizeConfig(TransferSettings):
    """Everything `run_mptcp.sh filesize` was asked to do."""
    # 1 to 1000 packets, log-spaced, as the paper's Fig. 17 axis.
    sizes_pkts: tuple[int, ...] = (1, 2, 5, 10, 20, 30, 50, 70, 100, 150, 200, 300, 500, 700, 1000)
    schemes: tuple[str, ...] = FILESIZE_SCHEMES
    repeats: int = 9                # transfers per point, one at a time; the point is their median
    # Each of the two paths; the paper's testbed had gigabit links through one
    # switch and no added delay (README, "File size").
    link: LinkParams = field(default_factory=lambda: LinkParams(bw_mbps=100.0))

    def validate(self) -> None:
        self.check_settings()
        check_choices("--schemes", "scheme", self.schemes, FILESIZE_SCHEMES)
        if not self.sizes_pkts:
            raise ConfigError("--sizes: give at least one file size")
        for n in self.sizes_pkts:
            if not 1 <= n <= MAX_SIZE_PKTS:
                raise ConfigError(f"--sizes {n}: file sizes must be within 1..{MAX_SIZE_PKTS} packets")
        if not 1 <= self.repeats <= 1000:
            raise ConfigError(f"--repeats {self.repeats}: must be within 1..1000")

    def points(self) -> list[FilesizePoint]:
        """Size by size, the schemes side by side: a drift of the machine
        during the sweep touches both alike."""
        return [FilesizePoint(s, n) for n in self.sizes_pkts for s in self.schemes]
