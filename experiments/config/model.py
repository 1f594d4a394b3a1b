"""The subflow model's config (paper Fig. 6): which FatTree sizes, how many
subflows. Nothing is emulated; the model is computed."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from base.options import check_declared, option
from experiments.config.flowlevel import check_arities

MODEL_K_MAX = 128               # 524288 hosts; the paper's figure stops at 48
MODEL_SUBFLOWS_MAX = 64


@dataclass(frozen=True)
class ModelConfig:
    """Paper Fig. 6: the subflow model's load variance, computed (no network)."""
    experiment: str = "model"
    # The paper's Fig. 6 sizes run up to k=48 (27648 hosts).
    ks: tuple[int, ...] = option((4, 8, 16, 32, 48), flag="--k", help="FatTree arities")
    max_subflows: int = option(16, flag="--subflows-max", metavar="N", low=1, high=MODEL_SUBFLOWS_MAX,
                               help="subflows m = 1..this")
    results: Path = Path("results")

    def validate(self) -> None:
        check_arities(self.ks, MODEL_K_MAX)
        check_declared(self)

    def points(self) -> list[str]:
        return ["model"]      # one record, computed

    def to_record(self) -> dict:
        return {"k": list(self.ks), "max_subflows": self.max_subflows}
