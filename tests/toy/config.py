"""The toy's config: its options declared on its fields, as every config's
(standard library only)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from base.options import check_declared, option


@dataclass(frozen=True)
class ToyConfig:
    """A toy: one run per number."""
    count: int = option(3, flag="--count", metavar="N", low=1, high=5, help="runs")
    time_s: float = 0.0
    results: Path = Path("results")

    def validate(self) -> None:
        check_declared(self)

    def points(self) -> list[int]:
        return list(range(1, self.count + 1))
