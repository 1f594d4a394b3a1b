"""An option declared once, on the config field it sets: its flag, unit,
range, choices and help ride in the field's metadata (`option(...)`), and the
parser, the checks, the help text and the config come from that declaration
(harness/declared.py builds the parser; `convert` and `check_declared` are
here, for the configs to use too: a config's `validate` checks what its
declarations say, whether it came from the command line or from code). The
field's type says how its text is read:

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
    unit: str = ""                          # of the range, in its message: "s", "packets"
    choices: tuple[str, ...] = ()           # the names a name, or each of a list, may be
    what: str = ""                          # what one of the choices is, for the message: "scheme"
    default_text: str | None = None         # the default, where the config computes it
    parse: Callable[[str], Any] | None = None   # text -> value, where the type does not say
    old: tuple[str, ...] = ()               # old spellings, refused in a line naming `flag`

    def range_text(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        if self.high is None:
            return f"at least {_shown(self.low)}{unit}"
        if self.low is None:
            return f"at most {_shown(self.high)}{unit}"
        return f"within {_shown(self.low)}..{_shown(self.high)}{unit}"


def _shown(x: float) -> str:
    """A bound as typed: 4294967295, not 4.29497e+09."""
    return str(x) if isinstance(x, int) else f"{x:g}"


def option(default=dataclasses.MISSING, *, factory=dataclasses.MISSING, **declared) -> Any:
    """A config field that is also an option: `option(10.0, flag="--bw", help=...)`."""
    return dataclasses.field(default=default, default_factory=factory,
                             metadata={KEY: Option(**declared)})


def names(choices, *, flag: str, what: str, default=None, of: str = "", **declared) -> Any:
    """A comma list of names, each one of `choices` (`what` one of them is,
    for the message), by default all of them; its help is `of`, then the
    choices."""
    choices = tuple(choices)
    declared.setdefault("default_text", "all" if default is None else ",".join(default))
    return option(choices if default is None else default, flag=flag, choices=choices, what=what,
                  help=f"{of}comma list of {', '.join(choices)}", **declared)


def links(*options: str, factory: Callable) -> Any:
    """A config's `link` field (a LinkParams) exposing these LinkParams options."""
    return dataclasses.field(default_factory=factory, metadata={LINKS: options})


def again(parent, name: str, default=dataclasses.MISSING, *, factory=dataclasses.MISSING,
          **changes) -> Any:
    """A field of `parent` declared again with another default, its option
    kept (but for `changes` to it: help=..., high=...)."""
    [f] = [f for f in dataclasses.fields(parent) if f.name == name]
    metadata = {**f.metadata, KEY: dataclasses.replace(f.metadata[KEY], **changes)} if changes else f.metadata
    return dataclasses.field(default=default, default_factory=factory, metadata=metadata)


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
    """Within the declared range (not a number, nan, is never within it)."""
    low = -math.inf if opt.low is None else opt.low
    high = math.inf if opt.high is None else opt.high
    if not low <= value <= high:
        raise ConfigError(f"{opt.flag} {value:g}: must be {opt.range_text()}")


def check_value(opt: Option, value) -> None:
    """A field's value against its declaration: each number of it within
    the range, each name one of the choices, and a list of names not empty.
    None (not given: the config chooses) passes."""
    if value is None:
        return
    values = value if isinstance(value, tuple) else (value,)
    if opt.choices:
        if not values:
            raise ConfigError(f"{opt.flag}: give at least one of " + ", ".join(opt.choices))
        for v in values:
            if v not in opt.choices:
                raise ConfigError(f"unknown {opt.what} {v!r}: choose from {', '.join(opt.choices)}")
    elif opt.low is not None or opt.high is not None:
        for v in values:
            check_range(opt, v)


def check_declared(cfg) -> None:
    """Every option `cfg` declares, against its declaration, and every link
    it declares with `links(...)` (its own validate)."""
    for f in dataclasses.fields(cfg):
        if KEY in f.metadata:
            check_value(f.metadata[KEY], getattr(cfg, f.name))
        elif LINKS in f.metadata:
            getattr(cfg, f.name).validate()
