"""File-size distributions (base/flowsizes.py): a CDF table read, checked
and drawn from, and the short-flows experiment drawing its files from one.

The statistical checks use a fixed seed and tolerances of four standard
errors, computed from the draws themselves: a wrong inverse (a shifted
segment, the point mass lost) moves the drawn shares by far more."""
from __future__ import annotations

import math
import random
import statistics
import subprocess

import pytest

from base.errors import ConfigError
from base.flowsizes import EmpiricalSizes, FixedSize, from_record
from base.links import LinkParams
from experiments.config import ShortflowsConfig
from tests.conftest import ROOT

# A table in the style of the published ones: a point mass at the first size,
# a flat step (no flow between 20 and 50 KB), a long tail.
TABLE = """\
# size_bytes  cumulative_fraction
1000    0.25
10000   0.5
20000,  0.7
50000   0.7
1000000 1.0
"""
N_DRAWS = 40_000


def test_the_drawn_shares_match_the_table_at_every_point():
    sizes = EmpiricalSizes.from_text(TABLE)
    rng = random.Random(11)
    draws = [sizes.draw(rng) for _ in range(N_DRAWS)]
    for size, fraction in sizes.points:
        share = sum(1 for d in draws if d <= size) / N_DRAWS
        tolerance = 4 * math.sqrt(max(fraction * (1 - fraction), 1e-4) / N_DRAWS)
        assert abs(share - fraction) <= tolerance, (size, share, fraction)
    assert sum(1 for d in draws if d == 1000) / N_DRAWS == pytest.approx(0.25, abs=0.01)
    assert not [d for d in draws if 20000 < d < 50000]          # the flat step holds no flow
    assert min(draws) == 1000 and max(draws) <= 1_000_000


def test_the_mean_is_the_tables_and_sets_the_default_interval():
    sizes = EmpiricalSizes.from_text(TABLE)
    # 0.25 x 1000 + 0.25 x 5500 + 0.2 x 15000 + 0 + 0.3 x 525000
    assert sizes.mean_bytes == pytest.approx(250 + 1375 + 3000 + 157500)
    rng = random.Random(5)
    draws = [sizes.draw(rng) for _ in range(N_DRAWS)]
    sd = statistics.pstdev(draws)
    assert abs(statistics.fmean(draws) - sizes.mean_bytes) <= 4 * sd / math.sqrt(len(draws))
    # The default gap keeps the short files' share of a host link: the
    # paper's 70 KB every 200 ms at 100 Mb/s, scaled by rate and mean size.
    fixed = ShortflowsConfig(link=LinkParams(bw_mbps=10))
    drawn = ShortflowsConfig(link=LinkParams(bw_mbps=10), file_cdf=sizes)
    assert fixed.interval == pytest.approx(2.0)
    assert drawn.interval == pytest.approx(2.0 * sizes.mean_bytes / 70_000)
    assert FixedSize(70_000).draw(random.Random(1)) == 70_000


@pytest.mark.parametrize("text,words", [
    ("", "no points"),
    ("# only a comment\n", "no points"),
    ("1000 0.5\n", "ends at 1"),
    ("1000 0.5 7\n2000 1\n", "line 1: expected"),
    ("1000 half\n2000 1\n", "not two numbers"),
    ("1000 50\n2000 100\n", "not a percentage"),
    ("1000 0\n2000 1\n", "within 0..1"),
    ("1000 nan\n2000 1\n", "within 0..1"),
    ("0 0.5\n2000 1\n", "whole number of bytes"),
    ("10.5 0.5\n2000 1\n", "whole number of bytes"),
    ("nan 0.5\n2000 1\n", "whole number of bytes"),
    ("2000 0.5\n1000 1\n", "line 2: sizes must increase"),
    ("1000 0.6\n2000 0.5\n3000 1\n", "must not decrease"),
])
def test_a_bad_table_is_refused_naming_its_line(text, words):
    with pytest.raises(ConfigError, match=words):
        EmpiricalSizes.from_text(text, "t.cdf")


@pytest.mark.parametrize("make,words", [
    (lambda d: d, "is a folder"),
    (lambda d: d / "missing.cdf", "cannot read it"),
    (lambda d: (d / "bad.cdf", (d / "bad.cdf").write_text("1000 0.5\n"))[0], "ends at 1"),
])
def test_the_script_refuses_a_bad_cdf_file_in_one_line(make, words, tmp_path):
    path = make(tmp_path)
    done = subprocess.run([str(ROOT / "run_mptcp.sh"), "shortflows", "--file-cdf", str(path)],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and words in lines[0], (done.returncode, lines)


@pytest.mark.parametrize("file_bytes", [1000, 70_000])     # 70 000: the default, typed
def test_file_bytes_and_a_cdf_together_are_refused(file_bytes):
    sizes = EmpiricalSizes.from_text(TABLE)
    with pytest.raises(ConfigError, match="give one of them"):
        ShortflowsConfig(file_bytes=file_bytes, file_cdf=sizes).validate()


def test_without_either_option_every_file_is_the_papers_70_kb():
    assert ShortflowsConfig().sizes == FixedSize(70_000)
    assert ShortflowsConfig(file_bytes=5000).sizes == FixedSize(5000)


def test_a_record_gives_back_the_sizes_it_was_written_from():
    for sizes in (EmpiricalSizes.from_text(TABLE, "web.cdf"), FixedSize(70_000)):
        assert from_record(sizes.to_record()) == sizes


def test_the_experiment_draws_its_files_from_the_cdf_and_records_them(tmp_path):
    """The files of one run: sizes from the table, the same for the same
    seed, and the record names the distribution."""
    from experiments.shortflows import ShortflowsExperiment

    class Fabric:
        def host_ip(self, host):
            return f"10.0.0.{host[1:]}"

    class Net:
        fabric = Fabric()

    class Pair:
        def __init__(self, src, dst):
            self.src, self.dst = src, dst

    sizes = EmpiricalSizes.from_text(TABLE, "web.cdf")
    cfg = ShortflowsConfig(file_cdf=sizes, results=tmp_path)
    pairs = [Pair(f"h{i}", f"h{i + 1}") for i in range(1, 9)]
    files = ShortflowsExperiment(cfg)._files(Net(), pairs, random.Random(4))
    again = ShortflowsExperiment(cfg)._files(Net(), pairs, random.Random(4))
    assert [f.size for f in files] == [f.size for f in again]
    assert len({f.size for f in files}) > 10
    assert {f.size for f in files} <= set(range(1000, 1_000_001))
    record = ShortflowsExperiment(cfg).config_record(Net(), ShortflowsConfig().points()[0], 1)
    assert record["file_bytes"] is None and record["file_sizes"]["kind"] == "cdf"
    assert record["file_sizes"]["source"] == "web.cdf"


def test_the_figure_names_the_sizes_of_either_kind_of_record():
    from figures.shortflows import _files
    sizes = EmpiricalSizes.from_text(TABLE, "/data/web.cdf")
    assert _files({"file_sizes": sizes.to_record(), "file_bytes": None}) == "files from web.cdf (mean 162 KB)"
    assert _files({"file_bytes": 70000}) == "70 KB files"         # a record from before the option
