"""The WiFi + 3G experiment's config (NSDI 2012 Fig. 4, after CS244 '14)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from base import records
from base.errors import ConfigError
from base.links import CELL, WIFI, LinkParams
from base.options import names, option
from experiments.config.common import (COUPLED_CONGESTION_CONTROLS, Settings, check_cc,
                                       check_lists_given, coupled_cc_supported)

WIFI3G_SCHEMES = ("tcp_wifi", "tcp_3g", "mptcp", "mptcp_penalized", "mptcp_hold")
WIFI3G_MPTCP_SCHEMES = ("mptcp", "mptcp_penalized", "mptcp_hold")
# Schemes whose sender runs another congestion control than the run's --cc:
# MPTCP with the NSDI 2012 penalization of slow subflows (kernel/bpf/penalize.h),
# and that with a send hold on a subflow whose data would block the receive
# window (kernel/bpf/hold.h).
WIFI3G_SCHEME_CC = {"mptcp_penalized": "liap", "mptcp_hold": "liab"}
WIFI3G_SWEEPS = ("buffer", "loss", "rtt")


@dataclass(frozen=True)
class Wifi3GPoint:
    """One run: a scheme, a receive buffer and the two paths."""
    sweep: str            # which sweep it belongs to: its x axis
    scheme: str           # tcp_wifi, tcp_3g, mptcp, mptcp_penalized or mptcp_hold
    buffer_kb: int        # the receiver's receive buffer
    wifi: LinkParams
    cell: LinkParams
    repeat: int = 0       # which run of the point (0 = the first)

    @property
    def x(self) -> float:
        """The point's value on its sweep's axis."""
        return {"buffer": self.buffer_kb, "loss": self.wifi.loss_pct,
                "rtt": 2 * self.wifi.delay_ms}[self.sweep]

    @property
    def label(self) -> str:
        """The run's folder name: the value, then -r2, -r3, ... for repeats."""
        value = {"buffer": f"{self.buffer_kb}kb", "loss": f"{self.wifi.loss_pct:g}pct",
                 "rtt": f"{2 * self.wifi.delay_ms:g}ms"}[self.sweep]
        return value + (f"-r{self.repeat + 1}" if self.repeat else "")

    def run_dir(self, results: Path) -> Path:
        return records.wifi3g_run(results, self.sweep, self.scheme, self.label)


@dataclass(frozen=True)
class Wifi3GConfig(Settings):
    """NSDI 2012 Fig. 4 (CS244 '14): WiFi + 3G, goodput against receive
    buffer, WiFi loss and RTT."""
    sweeps: tuple[str, ...] = names(WIFI3G_SWEEPS, flag="--sweeps", what="sweep")
    schemes: tuple[str, ...] = names(WIFI3G_SCHEMES, flag="--schemes", what="scheme",
                                     default_text="all but mptcp_penalized and mptcp_hold without a "
                                     "coupled --cc the kernel can run")
    # Up to 8 MB: with the 3G path's 2 s of buffer, MPTCP needs megabytes of
    # receive buffer before it gets both paths (docs/experiments/wifi3g.md).
    buffers_kb: tuple[int, ...] = option((50, 100, 150, 200, 300, 400, 500, 750, 1000, 2000, 4000, 8000),
                                         flag="--buffers", metavar="KB,...",
                                         help="receive buffers of the buffer sweep, KB")
    fixed_buffer_kb: int = option(500, flag="--buffer", metavar="KB",
                                  help="receive buffer of the loss and RTT sweeps, KB")
    wifi_loss_pcts: tuple[float, ...] = option((0.0, 0.5, 1.0, 2.0, 5.0), flag="--losses", metavar="PCT,...",
                                               help="WiFi loss rates of the loss sweep, %")
    wifi_rtts_ms: tuple[float, ...] = option((10.0, 20.0, 50.0, 100.0, 200.0), flag="--rtts",
                                             metavar="MS,...", help="WiFi RTTs of the RTT sweep, ms")
    samples: int = option(10, flag="--samples", metavar="N", low=1, high=600,
                          help="one-second goodput samples per point; the point is their median")
    repeats: int = option(1, flag="--repeats", metavar="N", low=1, high=20,
                          help="runs per point; the figure shows the median of their medians")
    warmup_s: float = option(10.0, flag="--warmup", metavar="S", low=0.0, high=600.0, unit="s",
                             help="seconds of traffic before sampling starts")
    wifi: LinkParams = WIFI
    cell: LinkParams = CELL

    @classmethod
    def resolve(cls, given: dict) -> list[str]:
        """By default the schemes whose congestion control --cc lets run."""
        if "schemes" in given:
            return []
        given["schemes"], note = cls.default_schemes(given["cc"])
        return [note]

    @staticmethod
    def default_schemes(cc: str) -> tuple[tuple[str, ...], str]:
        """(schemes, note): every scheme, less those whose congestion
        control (coupled: liap, liab) cannot run with --cc `cc` on this
        kernel, said in the note."""
        if cc in COUPLED_CONGESTION_CONTROLS and coupled_cc_supported():
            return WIFI3G_SCHEMES, ""
        left_out = tuple(WIFI3G_SCHEME_CC)
        return (tuple(s for s in WIFI3G_SCHEMES if s not in left_out),
                f"schemes: {', '.join(left_out)} left out (each runs a coupled congestion "
                f"control, which needs a coupled --cc on a kernel that can run it)")

    def validate(self) -> None:
        self.check_settings()
        for kb in (*self.buffers_kb, self.fixed_buffer_kb):
            if not 4 <= kb <= 65536:
                raise ConfigError(f"receive buffer {kb} KB: must be within 4..65536 KB")
        for scheme, cc in WIFI3G_SCHEME_CC.items():
            if scheme in self.schemes:
                check_cc(cc, flag=f"--schemes {scheme}")
                if self.cc not in COUPLED_CONGESTION_CONTROLS:
                    raise ConfigError(f"--schemes {scheme}: runs {cc}, which is loaded with the "
                                      f"coupled algorithms: give a coupled --cc "
                                      f"({', '.join(COUPLED_CONGESTION_CONTROLS)}) or leave {scheme} out")
        check_lists_given(self.sweeps, ("buffer", "--buffers", self.buffers_kb),
                          ("loss", "--losses", self.wifi_loss_pcts), ("rtt", "--rtts", self.wifi_rtts_ms))
        for p in self.points():
            p.wifi.validate()
            p.cell.validate()

    def points(self) -> list[Wifi3GPoint]:
        """Every run, grouped so that runs on the same paths are adjacent
        (the network is built once per pair of paths). A point's repeats
        take the schemes in turn, so that whatever drifts over a sweep
        touches every scheme alike."""
        # Each sweep's (receive buffer, WiFi path) values.
        paths = {"buffer": [(kb, self.wifi) for kb in self.buffers_kb],
                 "loss": [(self.fixed_buffer_kb, dataclasses.replace(self.wifi, loss_pct=loss))
                          for loss in self.wifi_loss_pcts],
                 "rtt": [(self.fixed_buffer_kb, dataclasses.replace(self.wifi, delay_ms=rtt / 2))
                         for rtt in self.wifi_rtts_ms]}
        return [Wifi3GPoint(sweep, s, kb, wifi, self.cell, i)
                for sweep in WIFI3G_SWEEPS if sweep in self.sweeps
                for kb, wifi in paths[sweep] for i in range(self.repeats) for s in self.schemes]
