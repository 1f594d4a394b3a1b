"""The file-size experiment's config (paper Fig. 17): the time to open a
connection and move one file, TCP against MPTCP, over file sizes."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from base import records
from base.errors import ConfigError
from base.links import LinkParams
from base.options import links, names, option
from experiments.config.common import Settings

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
class FilesizeConfig(Settings):
    """Paper Fig. 17: time to open a connection and move one file, TCP
    against MPTCP over two paths, against file size."""
    # 1 to 1000 packets, log-spaced, as the paper's Fig. 17 axis.
    sizes_pkts: tuple[int, ...] = option((1, 2, 5, 10, 20, 30, 50, 70, 100, 150, 200, 300, 500, 700, 1000),
                                         flag="--sizes", metavar="PKTS,...", low=1, high=MAX_SIZE_PKTS,
                                         unit="packets",
                                         help=f"file sizes in packets of {PACKET_BYTES} bytes")
    schemes: tuple[str, ...] = names(FILESIZE_SCHEMES, flag="--schemes", what="scheme")
    repeats: int = option(9, flag="--repeats", metavar="N", low=1, high=1000,
                          help="transfers per size and scheme, one at a time; the point is their median")
    # Each of the two paths; the paper's testbed had gigabit links through one
    # switch and no added delay (docs/experiments/filesize.md).
    link: LinkParams = links("bw_mbps", "delay_ms", "queue_pkts", factory=lambda: LinkParams(bw_mbps=100.0))

    def validate(self) -> None:
        self.check_settings()
        if not self.sizes_pkts:
            raise ConfigError("--sizes: give at least one file size")

    def points(self) -> list[FilesizePoint]:
        """Size by size, the schemes side by side: a drift of the machine
        during the sweep touches both alike."""
        return [FilesizePoint(s, n) for n in self.sizes_pkts for s in self.schemes]
