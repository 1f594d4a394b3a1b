"""File sizes for the transfer experiments: one fixed size (the paper's
70 KB short files, Fig. 12) or an empirical distribution read from a CDF
file, as datacenter studies describe their workloads (web search, data
mining: a table of sizes and the share of flows at most that size).

The CDF file format, one point per line:

    # comments and blank lines are ignored
    <size in bytes> <cumulative fraction of flows, 0 < F <= 1>

separated by spaces, tabs or a comma; sizes strictly increasing, fractions
non-decreasing, the last fraction 1. A draw picks a fraction u uniformly and
returns the size where the CDF reaches u, interpolating linearly between
points (as ns-2's EmpiricalRandomVariable does with interpolation on, the
convention most published CDF tables are written for). Below the first
point there is no interpolation: the first size has the first fraction as
a point mass.

In the base layer because the configs (standard library only) check a CDF
file before anything starts, and the experiments draw from the same object.
"""
from __future__ import annotations

import bisect
import random
import re
from dataclasses import dataclass
from pathlib import Path

from base.errors import ConfigError

MAX_FILE_BYTES = 100_000_000
MAX_CDF_POINTS = 10_000


@dataclass(frozen=True)
class FixedSize:
    """Every file the same size."""
    size_bytes: int

    def draw(self, rng: random.Random) -> int:
        return self.size_bytes

    @property
    def mean_bytes(self) -> float:
        return float(self.size_bytes)

    def describe(self) -> str:
        return f"{self.size_bytes / 1000:g} KB files"

    def to_record(self) -> dict:
        return {"kind": "fixed", "size_bytes": self.size_bytes}


@dataclass(frozen=True)
class EmpiricalSizes:
    """Sizes drawn from a CDF: points (size, cumulative fraction)."""
    points: tuple[tuple[int, float], ...]
    source: str = ""                # the file it was read from, for the record

    def draw(self, rng: random.Random) -> int:
        u = rng.random()
        fractions = [f for _, f in self.points]
        i = bisect.bisect_left(fractions, u)
        if i == 0:
            return self.points[0][0]
        # f0 < u <= f1 here, so a flat step (f0 == f1) is never inside one.
        (s0, f0), (s1, f1) = self.points[i - 1], self.points[i]
        return max(1, round(s0 + (s1 - s0) * (u - f0) / (f1 - f0)))

    @property
    def mean_bytes(self) -> float:
        """The mean of the interpolated distribution: the first point's mass,
        then each segment's share times its midpoint."""
        (s0, f0), mean = self.points[0], self.points[0][0] * self.points[0][1]
        for s1, f1 in self.points[1:]:
            mean += (f1 - f0) * (s0 + s1) / 2
            s0, f0 = s1, f1
        return mean

    def describe(self) -> str:
        return f"files from {Path(self.source).name or 'a CDF'} (mean {self.mean_bytes / 1000:.0f} KB)"

    def to_record(self) -> dict:
        return {"kind": "cdf", "source": self.source, "mean_bytes": round(self.mean_bytes, 1),
                "points": [list(p) for p in self.points]}

    def fraction_at(self, size: float) -> float:
        """The CDF at `size`, interpolated as draw() does."""
        (s0, f0) = self.points[0]
        if size < s0:
            return 0.0
        for s1, f1 in self.points[1:]:
            if size < s1:
                return f0 + (f1 - f0) * (size - s0) / (s1 - s0)
            s0, f0 = s1, f1
        return 1.0

    def above(self, min_bytes: int) -> "EmpiricalSizes":
        """The distribution of the sizes of at least `min_bytes`: the CDF
        from there on, rescaled to start at 0."""
        base = self.fraction_at(min_bytes)
        if base >= 1:
            raise ValueError(f"no sizes above {min_bytes} bytes")
        rest = [(s, (f - base) / (1 - base)) for s, f in self.points if s > min_bytes]
        return EmpiricalSizes(((min_bytes, 0.0), *rest), self.source)

    def scaled(self, factor: float) -> "EmpiricalSizes":
        """Every size times `factor` (at least 1 byte; sizes that round to
        the same byte count keep the larger fraction)."""
        points: dict[int, float] = {}
        for s, f in self.points:
            points[max(1, round(s * factor))] = f
        return EmpiricalSizes(tuple(points.items()), self.source)

    @classmethod
    def from_text(cls, text: str, source: str = "",
                  max_bytes: int = MAX_FILE_BYTES) -> "EmpiricalSizes":
        """Parse and check a CDF table; every fault is a ConfigError naming
        the file and line. Sizes up to `max_bytes`."""
        where = source or "CDF"
        points: list[tuple[int, float]] = []
        for n, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = [f for f in re.split(r"[\s,]+", line) if f]
            if len(fields) != 2:
                raise ConfigError(f"{where} line {n}: expected '<size bytes> <cumulative fraction>', "
                                  f"got {line!r}")
            try:
                size_f, fraction = float(fields[0]), float(fields[1])
            except ValueError:
                raise ConfigError(f"{where} line {n}: {line!r} is not two numbers") from None
            if not (size_f == size_f and 1 <= size_f <= max_bytes and size_f == int(size_f)):
                raise ConfigError(f"{where} line {n}: size {fields[0]} must be a whole number of "
                                  f"bytes within 1..{max_bytes}")
            if not 0 < fraction <= 1:     # NaN fails this too
                raise ConfigError(f"{where} line {n}: fraction {fields[1]} must be within 0..1 "
                                  "(above 0; a cumulative fraction, not a percentage)")
            if points and int(size_f) <= points[-1][0]:
                raise ConfigError(f"{where} line {n}: sizes must increase ({int(size_f)} after "
                                  f"{points[-1][0]})")
            if points and fraction < points[-1][1]:
                raise ConfigError(f"{where} line {n}: fractions must not decrease ({fraction:g} after "
                                  f"{points[-1][1]:g})")
            points.append((int(size_f), fraction))
            if len(points) > MAX_CDF_POINTS:
                raise ConfigError(f"{where}: more than {MAX_CDF_POINTS} points")
        if not points:
            raise ConfigError(f"{where}: no points (lines '<size bytes> <cumulative fraction>')")
        if points[-1][1] != 1:
            raise ConfigError(f"{where}: the last fraction is {points[-1][1]:g}; a CDF ends at 1")
        return cls(tuple(points), source)

    @classmethod
    def from_option(cls, given: str | None) -> "EmpiricalSizes | None":
        """--file-cdf as typed: None if not given."""
        if given is None:
            return None
        if not given:
            raise ConfigError("--file-cdf: give a file")
        return cls.from_file(Path(given))

    @classmethod
    def from_file(cls, path: Path, max_bytes: int = MAX_FILE_BYTES) -> "EmpiricalSizes":
        if path.is_dir():
            raise ConfigError(f"--file-cdf {path}: is a folder, not a file")
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or "not a text file"
            raise ConfigError(f"--file-cdf {path}: cannot read it ({reason})") from None
        return cls.from_text(text, str(path), max_bytes)


FileSizes = FixedSize | EmpiricalSizes


def from_record(sizes: dict) -> FileSizes:
    """The sizes a record's config.file_sizes describes (to_record's
    inverse), so a figure names them the way the run did."""
    if sizes["kind"] == "cdf":
        points = tuple((int(size), float(fraction)) for size, fraction in sizes["points"])
        return EmpiricalSizes(points, sizes["source"])
    return FixedSize(int(sizes["size_bytes"]))
