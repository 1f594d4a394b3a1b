"""The flow-level model's config (paper Fig. 2-3; dctopo/flowlevel.py): which
FatTree sizes, subflow counts, permutation seeds and equilibrium models.
Nothing is emulated; the model is computed. Standard library only: the
harness reads configs where numpy need not be importable."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from base.errors import ConfigError
from base.options import option

FLOWLEVEL_K_MIN, FLOWLEVEL_K_MAX = 4, 32     # 16 .. 8192 hosts; the paper's Fig. 2 is 8 and 32
FLOWLEVEL_SUBFLOWS_MAX = 8                   # dctopo/flowlevel.py draws eight routes per connection
# dctopo/flowlevel.py's MODELS (kept equal by tests/test_flowlevel.py); the first is its default
FLOWLEVEL_MODELS = ("lia", "maxmin")


@dataclass(frozen=True)
class FlowLevelConfig:
    """Paper Fig. 2-3 computed by a flow-level model: FatTree(k) up to k=32
    (8192 hosts), TCP against MPTCP with 1..8 subflows on random paths (no
    network)."""
    experiment: str = "flowlevel"
    # The paper's Fig. 2: 128 hosts (k=8) and 8192 (k=32).
    ks: tuple[int, ...] = option((8, 32), flag="--k", help="FatTree arities, even, 4..32")
    subflows: tuple[int, ...] = option(tuple(range(1, FLOWLEVEL_SUBFLOWS_MAX + 1)), flag="--subflows",
                                       help="subflow counts, 1 = TCP")
    seeds: tuple[int, ...] = option((0, 1, 2), flag="--seeds", low=0, high=2 ** 32 - 1,
                                    help="permutation and route seeds; the figure draws their spread")
    # Computed in this order; the first is the model the figures lead with
    # (Fig. 2's black bars, Fig. 3's curves), the others are drawn beside it.
    models: tuple[str, ...] = option(FLOWLEVEL_MODELS, flag="--model",
                                     help=f"equilibrium models, comma list of {', '.join(FLOWLEVEL_MODELS)} "
                                          "(dctopo/flowlevel.py); the first leads the figures")
    results: Path = Path("results")

    def validate(self) -> None:
        check_arities(self.ks, FLOWLEVEL_K_MAX)
        _check_list("--subflows", self.subflows, "subflow count")
        for m in self.subflows:
            if not _is_int(m) or not 1 <= m <= FLOWLEVEL_SUBFLOWS_MAX:
                raise ConfigError(f"--subflows {m}: must be within 1..{FLOWLEVEL_SUBFLOWS_MAX}")
        _check_list("--seeds", self.seeds, "seed")
        for s in self.seeds:
            if not _is_int(s) or s < 0:
                raise ConfigError(f"--seeds {s}: a seed is a whole number of at least 0")
        _check_list("--model", self.models, "model")
        for name in self.models:
            if name not in FLOWLEVEL_MODELS:
                raise ConfigError(f"--model {name}: one of {', '.join(FLOWLEVEL_MODELS)}")
        if not isinstance(self.results, Path) or not str(self.results).strip():
            raise ConfigError(f"--results {self.results!r}: give a folder")

    def to_record(self) -> dict:
        return {"k": list(self.ks), "subflows": list(self.subflows), "seeds": list(self.seeds),
                "models": list(self.models)}

    def points(self) -> list[FlowLevelPoint]:
        """(k, seed) in the order they are computed: each one permutation,
        every subflow count and model on it (one progress line each)."""
        return [FlowLevelPoint(k, s) for k in self.ks for s in self.seeds]


class FlowLevelPoint(NamedTuple):
    k: int
    seed: int


def check_arities(ks, k_max: int) -> None:
    """--k: FatTree arities, at least one and none twice, each even within 4..k_max."""
    _check_list("--k", ks, "FatTree arity")
    for k in ks:
        if not _is_int(k) or k % 2 or not FLOWLEVEL_K_MIN <= k <= k_max:
            raise ConfigError(f"--k {k}: a FatTree arity is even, within {FLOWLEVEL_K_MIN}..{k_max}")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_list(flag: str, values, what: str) -> None:
    if not values:
        raise ConfigError(f"{flag}: give at least one {what}")
    if len(set(values)) != len(values):
        raise ConfigError(f"{flag} {','.join(map(str, values))}: a {what} is given twice")
