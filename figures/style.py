"""The colours every figure shares, and the colour of each subflow count in
the FatTree figures."""
from __future__ import annotations

import matplotlib

TCP_COLOR, MPTCP_COLOR, INVALID_COLOR, REFERENCE_COLOR = "#7f7f7f", "#1f77b4", "#d9d9d9", "#d62728"
FLAG_COLOR = "#a00000"


def subflow_color(n: int):
    """TCP grey; MPTCP 2..8 subflows along viridis (dark to green), the same in every figure."""
    if n == 1:
        return TCP_COLOR
    return matplotlib.colormaps["viridis"](min(0.85, 0.8 * (n - 2) / 6))
