"""What a calibration is: this machine's measured forwarding cost for one
fabric (Calibration), what one MPTCP-8 run cost with the configuration it ran
(Observation), and the machine a calibration holds for."""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from base.platform import machine

CALIBRATION_VERSION = 3         # 3: observations carry their configuration
CALIBRATION_BW_MBPS = 10.0      # the link rate the calibration runs at


class CalibrationError(RuntimeError):
    """The calibration run failed: the sweep cannot be judged (exit 1)."""


@dataclass(frozen=True)
class Calibration:
    fabric: str
    machine: dict                   # kernel, cpus, cpu_model: where it holds
    core_s_per_gbit_hop: float      # CPU core-seconds per Gbit delivered across one link
    idle_pct: float                 # machine CPU with the network built, no traffic
    measured: dict                  # what the calibration run saw
    version: int = CALIBRATION_VERSION
    under_load: str = ""            # why it is not to be cached; "" where the machine was quiet
    observations: tuple = ()        # Observation.as_dict() of the calibration's repeats, then runs'

    def matches(self, fabric: str, on: dict | None = None) -> bool:
        """It holds for `fabric` on the machine `on` (this one by default)."""
        return (self.fabric == fabric and self.machine == (on or machine())
                and self.version == CALIBRATION_VERSION)

    def measured_cost(self, k: int, workload: str, bw_mbps: float) -> tuple[float, int] | None:
        """(median core-s per Gbit-hop demanded, how many runs) of the
        configuration's MPTCP-8 runs; None where it has not been run."""
        same = [o["per_demanded"] for o in self._of(k, workload, bw_mbps)
                if not o.get("saturated")]
        return (statistics.median(same), len(same)) if same else None

    def cost_floor(self, k: int, workload: str, bw_mbps: float) -> float | None:
        """The highest core-s per Gbit-hop demanded that the configuration's
        saturated MPTCP-8 runs measured (their true cost is at least that);
        None where none saturated."""
        floors = [o["per_demanded"] for o in self._of(k, workload, bw_mbps) if o.get("saturated")]
        return max(floors) if floors else None

    def cost_above(self, k: int, workload: str, bw_mbps: float) -> tuple[float, float] | None:
        """(the highest core-s per Gbit-hop demanded, at which rate) of the
        MPTCP-8 runs of this arity and workload at higher rates than
        `bw_mbps`: a rate costs at least as much per Gbit-hop as a higher
        one (fixed costs spread over less traffic); None where none ran."""
        above = [(o["per_demanded"], float(o["bw_mbps"])) for o in self.observations
                 if (o["k"], o["workload"]) == (k, workload) and float(o["bw_mbps"]) > bw_mbps]
        return max(above) if above else None

    def _of(self, k: int, workload: str, bw_mbps: float) -> list[dict]:
        return [o for o in self.observations
                if Observation.key_of(o) == (k, workload, float(bw_mbps))]


@dataclass(frozen=True)
class Observation:
    """What one MPTCP-8 run cost, with the configuration it ran."""
    k: int
    workload: str
    bw_mbps: float
    per_demanded: float             # CPU core-s above idle per Gbit-hop the matrix demands
    per_delivered: float            # ... per Gbit-hop its flows delivered
    saturated: bool = False         # the run saturated the CPU: both are floors

    def as_dict(self) -> dict:
        d = {"k": self.k, "workload": self.workload, "bw_mbps": float(self.bw_mbps),
             "per_demanded": round(self.per_demanded, 4),
             "per_delivered": round(self.per_delivered, 4)}
        return {**d, "saturated": True} if self.saturated else d

    @property
    def key(self) -> tuple:
        return Observation.key_of(self.as_dict())

    @staticmethod
    def key_of(obs: dict) -> tuple:
        return (obs["k"], obs["workload"], float(obs["bw_mbps"]))
