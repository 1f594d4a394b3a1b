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

At the shared bottleneck the access links carry 2 +- 2 ms of jitter
(JITTER): with exact timing a drop-tail queue drops by phase, MPTCP's
subflows lose that race, and an MPTCP connection takes less than the models
say, uncoupled or LIA (docs/notebook.md, "Phase effects"). With the jitter
the test asks for RFC 6356's outcome, with room for 20 s runs: LIA within
0.7-1.3 of the Reno flow (over 5 runs of 40 s the bench measured 0.83-0.95)
and uncoupled subflows at 1.5 or more (1.92-2.16). The loaded-path case
keeps exact timing and compares LIA with uncoupled Reno beside it.

Both cases use 25-packet queues. At a shared bottleneck with 100 packets a Reno
sawtooth lasts seconds, a 20 s run holds a few of them, and the ratio of
one run ranged 0.6-1.5 for LIA and 1.0-2.0 for uncoupled: means of three
runs overlapped (LIA 0.74-1.29, uncoupled 1.16-1.43 in five sets; two
CI-style runs failed; exact timing). With 25 packets and exact timing
(bench/fairness.py --queue 25, three runs each): uncoupled 1.32, 1.28,
1.55, LIA 0.47, 0.49, 0.57.
On the loaded path, 100 packets did not separate the shares either (a CI
run: uncoupled 0.67, 0.75, 0.71, LIA 0.72, 0.68, 0.70); with 25 packets the
bench gave uncoupled 0.69, 0.70, 0.68, LIA 0.79, 0.81, 0.79.
"""
from __future__ import annotations

import statistics

import pytest

from base.links import ACCESS
from experiments.fairness import TwoPathCase, TwoPathResult, jittered_access
from tests.conftest import needs_root

TIME_S, WARMUP_S = 20, 5
FIRST_PAIRS, MOST_PAIRS = 1, 3   # one pair; three when it does not separate them
QUEUE_PKTS = 25   # both cases: see the docstring
JITTER = jittered_access(2.0)   # the shared case's access links
LIA_RATIO = (0.7, 1.3)    # LIA over the Reno flow at the shared bottleneck
UNCOUPLED_RATIO = 1.5     # uncoupled subflows over the Reno flow: at least


def alternate(case: str, tmp_path, lia_wins, access=ACCESS) -> dict[str, list[TwoPathResult]]:
    """Pairs of runs (uncoupled, then LIA): FIRST_PAIRS of them, and up to
    MOST_PAIRS if `lia_wins(reno_run, lia_run)` does not hold for every pair."""
    results: dict[str, list[TwoPathResult]] = {"reno": [], "lia": []}
    with TwoPathCase(case, queue_pkts=QUEUE_PKTS, access=access) as two_paths:
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


def _rfc_outcome(reno: float, lia: float) -> bool:
    return LIA_RATIO[0] <= lia <= LIA_RATIO[1] and reno >= UNCOUPLED_RATIO and lia < 0.9 * reno


@needs_root
def test_lia_takes_one_flows_share_and_uncoupled_two_at_a_shared_bottleneck(tmp_path):
    results = alternate("shared", tmp_path, lambda reno, lia: _rfc_outcome(reno.ratio, lia.ratio), JITTER)
    for runs in results.values():
        for r in runs:
            assert r.delay_line.get("packets"), f"the access links' delay line saw nothing: {r.line()}"
    ratio = {cc: statistics.median(r.ratio for r in runs) for cc, runs in results.items()}
    print(f"MPTCP-2 / Reno at one bottleneck, median of {len(results['lia'])}: {ratio}")
    assert LIA_RATIO[0] <= ratio["lia"] <= LIA_RATIO[1], ratio
    assert ratio["reno"] >= UNCOUPLED_RATIO, ratio
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
