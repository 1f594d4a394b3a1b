"""How every figure draws a scheme: one row per scheme (label, colour,
marker), so TCP, MPTCP and each congestion control look the same in
every figure; the colours the figures share for what is not a scheme; and
the colour of each subflow count in the FatTree figures.

A figure module takes its schemes' rows with `scheme_style`, with a label
of its own where its figure names the scheme more closely ("TCP on DHFT").
Colours are matplotlib's tab10. Schemes never drawn in one figure may share
a colour; a scheme never has two. No scheme has a hatch of its own: a
hatched bar is an invalid run's, in every figure.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import matplotlib


@dataclass(frozen=True)
class Style:
    label: str
    colour: str
    marker: str


SCHEMES: dict[str, Style] = {
    "tcp":             Style("TCP", "#ff7f0e", "s"),
    "mptcp":           Style("MPTCP", "#1f77b4", "o"),
    # the congestion controls compared (`algorithms`, `hotspot`, Fig. 12, BCube many-to-one)
    "lia":             Style("MPTCP (LIA)", "#1f77b4", "o"),
    "ewtcp":           Style("EWTCP", "#2ca02c", "^"),
    "olia":            Style("OLIA", "#9467bd", "D"),
    "uncoupled":       Style("UNCOUPLED", "#d62728", "v"),
    # Hedera's first fit over single-path TCP (Fig. 13)
    "firstfit":        Style("first fit", "#2ca02c", "P"),
    # DHFT's reference (`dhft`)
    "tcp_perfect":     Style("TCP on the perfect switch", "#2ca02c", "^"),
    # WiFi + 3G (`wifi3g`)
    "tcp_wifi":        Style("TCP over WiFi", "#2ca02c", "s"),
    "tcp_3g":          Style("TCP over 3G", "#ff7f0e", "^"),
    # LIA with the NSDI 2012 penalization of slow subflows (kernel/bpf/penalize.h)
    "mptcp_penalized": Style("MPTCP + penalization (liap)", "#9467bd", "D"),
    "mptcp_hold":      Style("MPTCP + hold (liab)", "#8c564b", "v"),
}

INVALID_COLOR = "#d9d9d9"           # an invalid run's bar
REFERENCE_COLOR = "#d62728"         # reference values (the paper's, a simulation's)
FLAG_COLOR = "#a00000"              # flagged points and the notes naming their flags


def scheme_style(scheme: str, label: str | None = None) -> Style:
    """`scheme`'s row, with the figure's own `label` for it if given."""
    style = SCHEMES[scheme]
    return style if label is None else dataclasses.replace(style, label=label)


def subflow_color(n: int):
    """TCP's colour; MPTCP 2..8 subflows along viridis (dark to green), the same in every figure."""
    if n == 1:
        return SCHEMES["tcp"].colour
    return matplotlib.colormaps["viridis"](min(0.85, 0.8 * (n - 2) / 6))
