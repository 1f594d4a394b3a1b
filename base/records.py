"""Where every experiment's runs live under a results folder, and the run
record's schema version: written by the harness, read back by figures/ and
the tests. Each experiment's layout and the glob of its records are its
catalogue row's (base/catalogue.py: `layout`, `records`); the functions below
build its run folders. Standard library only, so figures can be drawn
without the harness's dependencies.

Each run folder holds run.json; a folder whose name starts with "." is a run
still being written (experiments/staging.py) and is never read back.
"""
from __future__ import annotations

from pathlib import Path

from base import catalogue

SCHEMA = 1
RECORD = catalogue.RECORD
# A default run of each experiment kept in the repository (figures/baseline.py).
BASELINES = Path(__file__).resolve().parent.parent / "docs" / "baseline"
BASELINE_RUNS = "runs.json"


def baseline_wall(name: str) -> tuple[float, int] | None:
    """(wall s, cores) of NAME's baseline, a run of its default command,
    where its runs.json records both; else None."""
    import json
    try:
        src = json.loads((BASELINES / name / BASELINE_RUNS).read_text())["source"]
        return float(src["wall_s"]), int(src["cores"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def fattree_run(results: Path, topology: str, workload: str, subflows: int,
                seed: int | None = None) -> Path:
    """`seed`: one of a sweep's --seeds, each in a folder of its own."""
    workload_dir = results / topology / workload
    return (workload_dir if seed is None else workload_dir / f"seed{seed}") / f"flows{subflows}"


def wifi3g_run(results: Path, sweep: str, scheme: str, label: str) -> Path:
    return results / "wifi3g" / sweep / scheme / label


def dhft_run(results: Path, k: int, sweep: str, scheme: str, label: str) -> Path:
    return results / f"dhft{k}" / sweep / scheme / label


def cc_compare_scheme(results: Path, experiment: str, k: int, scheme: str) -> Path:
    """The results folder of one scheme of `algorithms`/`hotspot`: a FatTree sweep's own."""
    return results / f"{experiment}{k}" / scheme


def linkfailure_run(results: Path, k: int, fabric: str, scheme: str) -> Path:
    return results / f"linkfailure{k}-{fabric}" / scheme


def oversub_run(results: Path, k: int, sweep: str, matrix: str, scheme: str, label: str) -> Path:
    return results / f"oversub{k}" / sweep / matrix / scheme / label


def topologies_run(results: Path, topology: str, subflows: int) -> Path:
    return results / "topologies" / topology / "permutation" / f"flows{subflows}"


def provisioned_run(results: Path, fabric: str, variant: str, scheme: str) -> Path:
    return results / (f"provisioned-{fabric}-{variant}" if variant else f"provisioned-{fabric}") / scheme


def filesize_run(results: Path, link: str, scheme: str, size_pkts: int) -> Path:
    return results / "filesize" / link / scheme / f"{size_pkts}pkts"


def shortflows_run(results: Path, k: int, scheme: str) -> Path:
    return results / f"shortflows{k}" / scheme


def transfers_run(results: Path, sweep: str, label: str, subflows: int) -> Path:
    return results / "transfers" / sweep / label / f"flows{subflows}"


def manytoone_run(results: Path, n: int, k: int, scheme: str) -> Path:
    # "reads" keeps the record four folders deep, apart from FATTREE_RECORDS.
    return results / "manytoone" / f"bcube{n}-{k}" / scheme / "reads"


def scheduling_run(results: Path, k: int, label: str, dilation: float = 1.0) -> Path:
    return results / (f"scheduling{k}" + ("" if dilation == 1 else f"-x{dilation:g}")) / label


def model_run(results: Path) -> Path:
    return results / "model"


def of(*experiments: str) -> tuple[str, ...]:
    """The globs of these experiments' records below a results folder: each
    experiment's catalogue row declares its own."""
    return tuple(g for name in experiments for g in catalogue.ROWS[name].records)


def committed(results: Path, pattern: str | tuple[str, ...]) -> list[Path]:
    """The records matching `pattern` (or any of several), sorted, without
    any still being written (a hidden folder on the way)."""
    patterns = (pattern,) if isinstance(pattern, str) else pattern
    return [p for p in sorted({q for pat in patterns for q in results.glob(pat)})
            if not any(part.startswith(".") for part in p.relative_to(results).parts)]
