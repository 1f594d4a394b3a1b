"""The short-flows experiment's config (paper Fig. 12): long flows of one
scheme beside short single-path TCP transfers on the 4:1 oversubscribed
FatTree."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from base import records
from base.errors import ConfigError
from base.flowsizes import MAX_FILE_BYTES, EmpiricalSizes, FileSizes, FixedSize
from base.links import LinkParams
from experiments.config.algorithms import KernelSchemes, SchemePoint, by_cc, cc_schemes
from experiments.config.common import LongFlowSettings, mptcp_subflows
from base.options import again, links, option
from experiments.config.oversub import OversubscribedSettings

# The paper's Fig. 12 compares single-path TCP, uncoupled subflows, EWTCP
# and LIA ("MPTCP") as the long flows' algorithm.
SHORTFLOWS_SCHEMES = ("tcp", "uncoupled", "ewtcp", "lia")
FILE_BYTES = 70_000                 # the paper's short files
PAPER_INTERVAL_S, PAPER_RATE_MBPS = 0.2, 100.0
MAX_FILES_PER_HOST = 535            # client ports 65000..65534 (experiments/shortflows.py)


@dataclass(frozen=True)
class ShortflowsPoint(SchemePoint):
    def run_dir(self, results: Path, k: int) -> Path:
        return records.shortflows_run(results, k, self.scheme)


@dataclass(frozen=True)
class ShortflowsConfig(OversubscribedSettings, KernelSchemes):
    """Paper Fig. 12: short files (70 KB) by TCP beside long flows of each
    scheme on the 4:1 oversubscribed FatTree."""
    HIDDEN_OPTIONS = ("cc",)            # the long flows' cc is each scheme's
    DEFAULT_SCHEMES = SHORTFLOWS_SCHEMES
    schemes: tuple[str, ...] = cc_schemes(SHORTFLOWS_SCHEMES, of="the long flows' ",
                                          default_text="all that this kernel can run")
    subflows: int = mptcp_subflows(4, "subflows of a multipath long flow")   # oversub's
    long_share: float = option(1 / 3, flag="--long-share", metavar="SHARE", default_text="a third",
                               help="share of the hosts that send a long flow")
    # One size for every file; None: the paper's 70 KB, unless file_cdf is
    # given. None rather than 70000 so that --file-bytes 70000 beside
    # --file-cdf is seen as the conflict it is.
    file_bytes: int | None = option(None, flag="--file-bytes", metavar="BYTES", low=1, high=MAX_FILE_BYTES,
                                    default_text=str(FILE_BYTES), help="short file size")
    # Sizes from a CDF file instead of file_bytes (base/flowsizes.py).
    file_cdf: EmpiricalSizes | None = option(None, flag="--file-cdf", metavar="FILE",
                                             parse=EmpiricalSizes.from_option, default_text="none",
                                             help="draw the short files' sizes from a CDF file instead: "
                                                  "lines '<size bytes> <cumulative fraction>' (docs/experiments/shortflows.md)")
    # Mean gap between one host's short files. None: the paper's 200 ms at
    # 100 Mb/s scaled to the link rate and to the files' mean size, so short
    # files load a host's link by the same share (2.8 %).
    interval_s: float | None = option(None, flag="--file-interval", old=("--interval",), metavar="S",
                                      low=0.01, high=600.0, unit="s",
                                      help="mean seconds between one host's files",
                                      default_text=f"the paper's 0.2 at 100 Mb/s, times 100/bw, times "
                                                   f"the files' mean size over {FILE_BYTES // 1000} KB")
    time_s: float = again(LongFlowSettings, "time_s", 40.0)
    link: LinkParams = links("bw_mbps", "queue_pkts", factory=LinkParams)

    @property
    def interval(self) -> float:
        if self.interval_s is not None:
            return self.interval_s
        return (PAPER_INTERVAL_S * PAPER_RATE_MBPS / self.link.bw_mbps
                * self.sizes.mean_bytes / FILE_BYTES)

    @property
    def sizes(self) -> FileSizes:
        """The short files' size distribution."""
        if self.file_cdf is not None:
            return self.file_cdf
        return FixedSize(FILE_BYTES if self.file_bytes is None else self.file_bytes)

    def validate(self) -> None:
        self.check_network()
        self.check_settings()
        if not 0 < self.long_share < 1:
            raise ConfigError(f"--long-share {self.long_share}: a fraction of the hosts, within 0..1")
        if self.file_cdf is not None and self.file_bytes is not None:
            raise ConfigError("--file-bytes and --file-cdf: give one of them")
        if self.time_s / self.interval > MAX_FILES_PER_HOST / 2:
            raise ConfigError(f"--file-interval {self.interval:g}: {self.time_s:g} s would give each host "
                              f"about {self.time_s / self.interval:.0f} files; at most "
                              f"{MAX_FILES_PER_HOST // 2} (a client port each)")

    def points(self) -> list[ShortflowsPoint]:
        """One run per scheme, those of one congestion control adjacent."""
        return [ShortflowsPoint(s) for s in by_cc(self.schemes)]
