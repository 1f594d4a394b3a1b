"""The docs' pictures come from the script and the topologies a run uses."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from figures import diagrams  # noqa: E402


def test_the_pictures_are_drawn_and_every_one_is_shipped_and_linked(tmp_path):
    made = diagrams.draw_all(tmp_path)
    assert all(p.stat().st_size > 10_000 and p.read_bytes()[:4] == b"\x89PNG" for p in made)
    assert {p.name for p in made} == {p.name for p in diagrams.IMG.glob("*.png")}
    docs = "".join(p.read_text() for p in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
    assert all(f"img/{p.name}" in docs for p in made)


def test_the_fattree_picture_names_the_nodes_a_run_uses():
    pos = diagrams._tier_positions(diagrams.FatTree(k=4))
    assert len(pos) == 36 and pos["c0"][1] > pos["a0_0"][1] > pos["e0_0"][1] > pos["h0_0_0"][1]
