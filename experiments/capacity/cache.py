"""The calibration cache, one file a fabric, and what a sweep's runs teach it."""
from __future__ import annotations

import dataclasses
import json
import statistics
from dataclasses import asdict
from pathlib import Path

from base.files import atomic_write_text
from base.platform import calibration_file, harness_cache
from experiments.capacity.calibration import CALIBRATION_BW_MBPS, Calibration, Observation
from experiments.capacity.prediction import cost_for

CACHE_DIR = harness_cache()
OBSERVATIONS_KEPT = 9           # per configuration: what the cache's median is taken over


def cache_path(fabric: str) -> Path:
    return CACHE_DIR / calibration_file(fabric)


def load(fabric: str) -> Calibration | None:
    try:
        return parse(json.loads(cache_path(fabric).read_text()), fabric)
    except (OSError, ValueError):
        return None


def parse(data, fabric: str, on: dict | None = None) -> Calibration | None:
    """A cached calibration's JSON as a Calibration, where it holds for
    `fabric` on the machine `on` (base.platform.machine(); this one by default)."""
    try:
        cal = Calibration(**{**data, "observations": tuple(data.get("observations", ()))})
    except (TypeError, AttributeError):
        return None
    return cal if cal.matches(fabric, on) else None


def save(cal: Calibration) -> None:
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    atomic_write_text(cache_path(cal.fabric), json.dumps(asdict(cal), indent=1) + "\n")


def learn(fabric: str, observed: list[Observation], say=print) -> None:
    """Fold what a sweep's runs cost into the cache: each configuration keeps
    its last OBSERVATIONS_KEPT observations and is predicted from their
    median; the cost for configurations not run is the median of those at
    the calibration's rate. One noisy measurement cannot decide for good."""
    cal = load(fabric)
    if cal is None or not observed:
        return
    kept: dict[tuple, list[dict]] = {}
    for obs in list(cal.observations) + [o.as_dict() for o in observed]:
        kept.setdefault(Observation.key_of(obs), []).append(obs)
    observations = tuple(o for same in kept.values() for o in same[-OBSERVATIONS_KEPT:])
    at_calibration_rate = [o["per_delivered"] for o in observations
                           if float(o["bw_mbps"]) == CALIBRATION_BW_MBPS and not o.get("saturated")]
    new = dataclasses.replace(cal, observations=observations, core_s_per_gbit_hop=round(
        statistics.median(at_calibration_rate), 4) if at_calibration_rate else cal.core_s_per_gbit_hop)
    save(new)
    for key in sorted({o.key for o in observed}):
        seen = ", ".join(f"{o.per_demanded:.2f}{' (saturated: at least)' if o.saturated else ''}"
                         for o in observed if o.key == key)
        cost, basis = cost_for(new, *key)
        say(f"capacity: FatTree({key[0]}) {key[1]} at {key[2]:g} Mb/s measured {seen} core-s "
            f"per Gbit-hop demanded; the guard now predicts it from {cost:.2f} ({basis})")
