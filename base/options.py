"""An option declared once, on the config field it sets: its flag, unit,
range and help ride in the field's metadata (`option(...)`), and the parser,
the range check, the help text and the config come from that declaration
(harness/declared.py builds the parser; `convert` and `check` are here, for
the configs to use too). The field's type says how its text is read:

    int, float          one number (finite)
    bool                a flag that takes no value
    str, Path           the text as given
    tuple[int, ...], tuple[float, ...], tuple[str, ...]
                        a comma list
    X | None            as X; None (not given) lets the config choose

Standard library only (the input check runs before anything is installed).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from base.errors import ConfigError

KEY = "option"
LINKS = "links"       # metadata of a config's `link`: which LinkParams options it exposes


@dataclass(frozen=True)
class Option:
    flag: str
    help: str
    metavar: str = ""                       # with its unit: MBPS, S, KB, PKTS, N
    low: float | None = None                # range of a number, or of each in a list
    high: float | None = None
    default_text: str | None = None         # the default, where the config computes it
    parse: Callable[[str], Any] | None = None   # text -> value, where the type does not say
    old: tuple[str, ...] = ()               # old spellings still taken, with a note

    def range_text(self) -> str:
        return f"{self.low:g}..{self.high:g}"


def option(default=dataclasses.MISSING, *, factory=dataclasses.MISSING, **declared) -> Any:
    """A config field that is also an option: `option(10.0, flag="--bw", help=...)`."""
    return dataclasses.field(default=default, default_factory=factory,
                             metadata={KEY: Option(**declared)})


def links(*names: str, factory: Callable) -> Any:
    """A config's `link` field (a LinkParams) exposing these LinkParams options."""
    return dataclasses.field(default_factory=factory, metadata={LINKS: names})


def again(parent, name: str, default=dataclasses.MISSING, *, factory=dataclasses.MISSING) -> Any:
    """A field of `parent` declared again with another default, its option kept."""
    [f] = [f for f in dataclasses.fields(parent) if f.name == name]
    return dataclasses.field(default=default, default_factory=factory, metadata=f.metadata)


def one_of_list(flag: str, what: str):
    """`parse` for a list option of which an experiment takes one value
    (`--subflows` where the experiment has no subflow axis)."""
    def parse(text: str) -> int:
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if len(parts) != 1:
            raise ConfigError(f"{flag} {text}: {what} takes one value here (it has no axis to sweep)")
        return int(_number(parts[0], flag, int))
    return parse


def declared(cls) -> list[tuple[dataclasses.Field, Option]]:
    """The fields of a config class that are options, in declaration order."""
    return [(f, f.metadata[KEY]) for f in dataclasses.fields(cls) if KEY in f.metadata]


def kind_of(f: dataclasses.Field) -> str:
    """The field's type without `| None`: "int", "tuple[str, ...]", ..."""
    t = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    return t.replace(" | None", "").strip()


def _number(text: str, flag: str, of) -> float:
    try:
        value = of(text)
    except ValueError:
        raise ConfigError(f"{flag} {text!r}: expected {'a whole number' if of is int else 'a number'}") from None
    if not math.isfinite(value):
        raise ConfigError(f"{flag} {text!r}: expected a finite number")
    return value


def convert(text: str, f: dataclasses.Field, opt: Option):
    """The value of a field from the option's text, checked against its
    declared range and choices."""
    if opt.parse is not None:
        return opt.parse(text)
    kind = kind_of(f)
    if kind.startswith("tuple["):
        inner = kind[len("tuple["):].split(",")[0]
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if inner in ("int", "float"):
            try:
                numbers = [(int if inner == "int" else float)(p) for p in parts]
            except ValueError:
                raise ConfigError(f"{opt.flag} {text!r}: expected a comma list of numbers") from None
            if not all(math.isfinite(v) for v in numbers):
                raise ConfigError(f"{opt.flag} {text!r}: expected finite numbers")
        return tuple(_scalar(p, inner, opt) for p in parts)
    return _scalar(text, kind, opt)


def _scalar(text: str, kind: str, opt: Option):
    """One value; names are checked by the config, which says what they name."""
    if kind in ("int", "float"):
        value = _number(text, opt.flag, int if kind == "int" else float)
        check_range(opt, value)
        return value
    return Path(text) if kind == "Path" else text


def check_range(opt: Option, value: float) -> None:
    if opt.low is not None and value < opt.low or opt.high is not None and value > opt.high:
        raise ConfigError(f"{opt.flag} {value:g}: must be within {opt.range_text()}")
