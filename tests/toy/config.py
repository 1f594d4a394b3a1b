"""The toy's options and config (standard library only, like every config)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from base.errors import ConfigError
from harness.shared_options import add_results_options, subcommand_parser


@dataclass(frozen=True)
class ToyConfig:
    count: int = 3
    time_s: float = 0.0
    results: Path = Path("results")

    def validate(self) -> None:
        if not 1 <= self.count <= 5:
            raise ConfigError(f"--count {self.count}: must be within 1..5")

    def points(self) -> list[int]:
        return list(range(1, self.count + 1))


def parser():
    p = subcommand_parser("toy", "A toy: one run per number.")
    p.add_argument("--count", type=int, default=ToyConfig.count, help="runs (default: %(default)s)")
    add_results_options(p)
    return p


def config_from(argv: list[str]):
    args = parser().parse_args(argv)
    cfg = ToyConfig(count=args.count, results=Path(args.results))
    cfg.validate()
    return cfg, args
