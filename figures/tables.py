"""report.md's lines: a section's head, per-figure tables of runs, and a
sweep's table of points."""
from __future__ import annotations


def section_head(text: str) -> list[str]:
    """report.md lines of a section's title and paragraph, written as
    "title\n\nparagraph" (wrapped): the paragraph becomes one line."""
    title, paragraph = text.split("\n\n", 1)
    return [title, "", " ".join(paragraph.split()), ""]


def figure_tables(head: str, figures: dict[str, dict], columns: list[str], row) -> list[str]:
    """report.md lines of a section of per-figure tables: the section head
    (`section_head`), then per figure its image and a table, one row per run
    (`row(key, run)` gives the cells); nothing where there are no figures."""
    if not figures:
        return []
    lines = section_head(head)
    for name, runs in figures.items():
        lines += [f"![{name}](plots/{name}.png)", "", "| " + " | ".join(columns) + " |",
                  "| --- " * len(columns) + "|"]
        lines += ["| " + " | ".join(row(key, run)) + " |" for key, run in runs.items()]
        lines.append("")
    return lines


def points_table(schemes: dict[str, list], scheme_names: dict[str, str], first_head: str,
                 extra_heads: list[str], row) -> list[str]:
    """A markdown table of a sweep: one row per x value seen in any scheme's
    points (each with `.x`); `row(x, {scheme: its point at x or None})`
    gives the row's cells, the first being x."""
    lines = ["| " + " | ".join([first_head, *scheme_names.values(), *extra_heads]) + " |",
             "| --- " * (1 + len(scheme_names) + len(extra_heads)) + "|"]
    for x in sorted({p.x for pts in schemes.values() for p in pts}):
        by = {s: next((p for p in schemes.get(s, []) if p.x == x), None) for s in scheme_names}
        lines.append("| " + " | ".join(row(x, by)) + " |")
    return lines
