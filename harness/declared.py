"""The command line of an experiment from its config's declared options
(base/options.py): the parser, and `argv -> (config, args)`. A config's
`link` declared with `links(...)` exposes the LinkParams options it names
(each declared once in base/links.py). Standard library only."""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from base.files import check_folder_path
from base.links import LinkParams
from base.errors import ConfigError
from base.options import KEY, LINKS, Option, convert, declared, kind_of
from experiments.config.common import default_cc
from harness.shared_options import add_results_options, subcommand_parser

def _shown(value) -> str:
    if isinstance(value, tuple):
        return ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def _default(f: dataclasses.Field):
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else None


class _Declared(argparse.Action):
    """Stores the text; an old spelling is refused in one line naming the new one."""
    def __call__(self, parser, namespace, values, option_string=None):
        if option_string != self.option_strings[0]:
            parser.error(f"{option_string} is now {self.option_strings[0]}")
        setattr(namespace, self.dest, True if self.nargs == 0 else values)


def _add(p: argparse.ArgumentParser, f: dataclasses.Field, opt: Option, dest: str, default) -> None:
    shown = opt.default_text if opt.default_text is not None else _shown(default)
    limits = "" if opt.low is None and opt.high is None else f"{opt.range_text()}; "
    help_text = f"{opt.help} ({limits}default: {shown})".replace("%", "%%")
    kind = kind_of(f)
    metavar = None if kind == "bool" else opt.metavar or ("LIST" if kind.startswith("tuple[") else None)
    p.add_argument(opt.flag, *opt.old, dest=dest, default=None, action=_Declared,
                   nargs=0 if kind == "bool" else None, metavar=metavar, help=help_text)


def add_options(p: argparse.ArgumentParser, cls) -> None:
    """Every option `cls` declares, less those it hides (`HIDDEN_OPTIONS`)."""
    hidden = getattr(cls, "HIDDEN_OPTIONS", ())
    p.set_defaults(notes=[])
    for f in dataclasses.fields(cls):
        if f.name in hidden:
            continue
        if LINKS in f.metadata:
            link = _default(f)
            for sub, opt in declared(LinkParams):
                if sub.name in f.metadata[LINKS]:
                    _add(p, sub, opt, f"{f.name}.{sub.name}", getattr(link, sub.name))
        elif KEY in f.metadata:
            _add(p, f, f.metadata[KEY], f.name, _default(f))


def add_positionals(p: argparse.ArgumentParser, cls) -> None:
    """Options a config also takes as words (`POSITIONALS`: field -> metavar),
    each optional, in order: `run_mptcp.sh 8 all`."""
    for name, metavar in getattr(cls, "POSITIONALS", {}).items():
        p.add_argument(f"{name}.word", nargs="?", default=None, metavar=metavar,
                       help=f"as {_option_of(cls, name).flag}")


def _option_of(cls, name: str) -> Option:
    return next(opt for f, opt in declared(cls) if f.name == name)


def _from_words(cls, args: argparse.Namespace) -> None:
    """A positional word stands for its option; given both ways, they must agree."""
    for name, metavar in getattr(cls, "POSITIONALS", {}).items():
        word, flagged = getattr(args, f"{name}.word", None), getattr(args, name, None)
        if word is not None and flagged is not None and word != flagged:
            raise ConfigError(f"{metavar} {word} and {_option_of(cls, name).flag} {flagged}: give it once")
        if word is not None:
            setattr(args, name, word)


def given(cls, args: argparse.Namespace) -> dict:
    """The fields the command line set, converted and range-checked."""
    _from_words(cls, args)
    values: dict = {}
    for f in dataclasses.fields(cls):
        if LINKS in f.metadata:
            subs = {sub.name: convert(text, sub, opt) for sub, opt in declared(LinkParams)
                    if (text := getattr(args, f"{f.name}.{sub.name}", None)) is not None}
            if subs:
                values[f.name] = dataclasses.replace(_default(f), **subs)
        elif KEY in f.metadata and (text := getattr(args, f.name, None)) is not None:
            values[f.name] = True if text is True else convert(text, f, f.metadata[KEY])
    return values


def command(name: str, cls, prog: str | None = None, epilog=None):
    """(parser, config_from) of an experiment whose options its config
    declares; the config's docstring, what the experiment does, is its
    --help's description. A config may define `resolve(given) -> notes` to
    fill defaults that depend on this machine (its schemes, fabric) before
    it is built. `epilog`: a function giving text for the end of --help."""
    def parser() -> argparse.ArgumentParser:
        p = subcommand_parser(name, " ".join(cls.__doc__.split()), prog=prog,
                              epilog=epilog() if epilog else None)
        add_positionals(p, cls)
        add_options(p, cls)
        add_results_options(p)
        return p

    def config_from(argv: list[str]):
        args = parser().parse_args(argv)
        check_folder_path(args.results, "--results")
        values = given(cls, args)
        notes = list(args.notes)
        fields = {f.name for f in dataclasses.fields(cls)}
        if "cc" in fields and "cc" not in values:
            values["cc"], note = default_cc()
            if "cc_note" in fields:         # kept by the config: its runs record it
                values["cc_note"] = note
            elif "cc" not in getattr(cls, "HIDDEN_OPTIONS", ()):
                notes.append(note)
        if hasattr(cls, "resolve"):
            notes += cls.resolve(values)
        cfg = cls(results=Path(args.results), **values)
        cfg.validate()
        args.notes = [n for n in notes if n]
        return cfg, args
    return parser, config_from


def row_command(row):
    """(parser, config_from) of a catalogue row: its own where it names them,
    else made from the config class it names."""
    if row.config_from:
        return row.load("parser"), row.load("config_from")
    return command(row.name, row.load("config"))
