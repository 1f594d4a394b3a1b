"""What coupling does on the real kernel (experiments/fairness.py): LIA
against uncoupled Reno subflows at a shared bottleneck and on two paths of
which one is loaded. Runs of the two alternate on one network, 20 s after
a 5 s warm-up; the figures are printed (pytest -s). One pair, and two more
only when it does not separate them: at 25-packet queues almost every single
run separates LIA from uncoupled (the bench figures below), and each pair
costs 50 s of the suite's 20 minutes (two pairs in every case put the suite
at 21 minutes in CI). Where three pairs are run the verdict is on their
medians, so one odd run among three cannot decide it. Such a run happened in a clean-clone CI run
on a2953b0: on the loaded-path case one LIA run carried 3.66 Mb/s in all,
half of it on the free 10 Mb/s path (share 0.50), where the other LIA run
had 7.98 Mb/s and 0.79, and uncoupled 0.67 and 0.68. LIA not filling a
free path is issue 24's open problem, not what these tests judge.

The bounds compare LIA with uncoupled Reno measured beside it rather than
with RFC 6356's absolute goals (LIA at one TCP flow's rate within 20 %,
uncoupled at two flows'): on this kernel, at a drop-tail queue, an MPTCP
subflow takes less than a TCP flow beside it, uncoupled or not (figures in
bench/README.md), so the absolute goals cannot be told apart from that in a
CI-sized test. What the coupling must show does not depend on it: LIA takes
clearly less than uncoupled subflows at the shared bottleneck, and less of
the loaded path.

Both cases use 25-packet queues. At a shared bottleneck with 100 packets a Reno
sawtooth lasts seconds, a 20 s run holds a few of them, and the ratio of
one run ranged 0.6-1.5 for LIA and 1.0-2.0 for uncoupled: means of three
runs overlapped (LIA 0.74-1.29, uncoupled 1.16-1.43 in five sets; two
CI-style runs failed). With 25 packets (bench/fairness.py --queue 25,
three runs each): uncoupled 1.32, 1.28, 1.55, LIA 0.47, 0.49, 0.57.
On the loaded path, 100 packets did not separate the shares either (a CI
run: uncoupled 0.67, 0.75, 0.71, LIA 0.72, 0.68, 0.70); with 25 packets the
bench gave uncoupled 0.69, 0.70, 0.68, LIA 0.79, 0.81, 0.79.
"""
from __future__ import annotations

import statistics

import pytest

from experiments.fairness import TwoPathCase, TwoPathResult
from tests.conftest import needs_root

TIME_S, WARMUP_S = 20, 5
FIRST_PAIRS, MOST_PAIRS = 1, 3   # one pair; three when it does not separate them
QUEUE_PKTS = 25   # both cases: see the docstring


def alternate(case: str, tmp_path, lia_wins) -> dict[str, list[TwoPathResult]]:
    """Pairs of runs (uncoupled, then LIA): FIRST_PAIRS of them, and up to
    MOST_PAIRS if `lia_wins(reno_run, lia_run)` does not hold for every pair."""
    results: dict[str, list[TwoPathResult]] = {"reno": [], "lia": []}
    with TwoPathCase(case, queue_pkts=QUEUE_PKTS) as two_paths:
        while True:
            for cc in results:
                result = two_paths.run(cc, TIME_S, WARMUP_S, tmp_path)
                print(result.line())
                assert not result.errors, result.line()
                assert result.mptcp_mbps > 1 and all(r > 1 for r in result.reno_mbps), result.line()
                results[cc].append(result)
            pairs = list(zip(results["reno"], results["lia"]))
            if len(pairs) >= MOST_PAIRS or (len(pairs) == FIRST_PAIRS
                                            and all(lia_wins(*p) for p in pairs)):
                return results


@pytest.fixture(autouse=True)
def _clean(no_leftovers, awake):
    yield


@needs_root
def test_lia_takes_less_than_uncoupled_at_a_shared_bottleneck(tmp_path):
    results = alternate("shared", tmp_path, lambda reno, lia: lia.ratio < 0.9 * reno.ratio)
    ratio = {cc: statistics.median(r.ratio for r in runs) for cc, runs in results.items()}
    print(f"MPTCP-2 / Reno at one bottleneck, median of {len(results['lia'])}: {ratio}")
    assert ratio["lia"] < 0.9 * ratio["reno"], ratio


@needs_root
def test_lia_moves_traffic_off_the_loaded_path(tmp_path):
    results = alternate("shift", tmp_path, lambda reno, lia: (
        lia.free_share > reno.free_share
        and statistics.fmean(lia.reno_mbps) > statistics.fmean(reno.reno_mbps)))
    share = {cc: statistics.median(r.free_share for r in runs) for cc, runs in results.items()}
    reno = {cc: statistics.median(statistics.fmean(r.reno_mbps) for r in runs)
            for cc, runs in results.items()}
    print(f"medians of {len(results['lia'])}: MPTCP's share on the free path: {share}; "
          f"the Reno flow on the loaded path: {reno} Mb/s")
    assert share["lia"] > share["reno"], share
    assert reno["lia"] > reno["reno"], reno
