"""Traffic matrices: their defining properties, and that a seed fixes them."""
from collections import Counter

import pytest

from dctopo import FatTree
from dctopo.workloads import CLIENTS_PER_SERVER, load_or_make, make_matrix

HOSTS = FatTree(k=4).hosts()


@pytest.mark.parametrize("seed", range(5))
def test_one_to_one_is_a_permutation_without_self_flows(seed):
    m = make_matrix("one_to_one", HOSTS, seed)
    assert sorted(f.src for f in m.flows) == sorted(HOSTS)
    assert sorted(f.dst for f in m.flows) == sorted(HOSTS)
    assert all(f.src != f.dst for f in m.flows)
    assert all(m.share(f) == 1.0 for f in m.flows)


def test_one_to_several_every_host_serves_distinct_clients():
    m = make_matrix("one_to_several", HOSTS, 3)
    clients = {h: [f.src for f in m.flows if f.dst == h] for h in HOSTS}
    assert all(len(c) == len(set(c)) == CLIENTS_PER_SERVER and h not in c for h, c in clients.items())
    assert Counter(f.src for f in m.flows) == Counter({h: CLIENTS_PER_SERVER for h in HOSTS})
    assert all(m.share(f) == 1 / CLIENTS_PER_SERVER for f in m.flows)


def test_all_to_all():
    m = make_matrix("all_to_all", HOSTS, 0)
    n = len(HOSTS)
    assert len(m.flows) == len(set(m.flows)) == n * (n - 1)
    assert all(abs(m.share(f) - 1 / (n - 1)) < 1e-12 for f in m.flows)


def test_seed_fixes_the_mapping_and_changes_it():
    assert make_matrix("one_to_one", HOSTS, 1) == make_matrix("one_to_one", list(reversed(HOSTS)), 1)
    assert make_matrix("one_to_one", HOSTS, 1).flows != make_matrix("one_to_one", HOSTS, 2).flows


def test_saved_mapping_is_reused(tmp_path):
    path = tmp_path / "matrix.json"
    first = load_or_make(path, "one_to_one", HOSTS, 5)
    # a later rerun draws nothing new, even if the drawing code changed
    path.write_text(path.read_text().replace('"seed": 5', '"seed": 5 '))
    assert load_or_make(path, "one_to_one", HOSTS, 5) == first
    assert load_or_make(path, "one_to_one", HOSTS, 6).seed == 6


def test_poisson_starts_have_the_configured_mean_and_exponential_gaps():
    """20000 s at 5 arrivals a second: the count within 4 standard deviations
    of rate x duration (Poisson: sd = its square root), and the gaps'
    variance near their mean squared, as exponential gaps have (even gaps of
    the same mean would have none)."""
    import random
    import statistics
    from dctopo.workloads import poisson_starts
    rate, duration = 5.0, 20000.0
    starts = poisson_starts(rate, duration, random.Random(7))
    expected = rate * duration
    assert abs(len(starts) - expected) <= 4 * expected ** 0.5, len(starts)
    assert starts == sorted(starts) and 0 <= starts[0] and starts[-1] < duration
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    mean = statistics.fmean(gaps)
    assert abs(mean - 1 / rate) <= 4 * (1 / rate) / len(gaps) ** 0.5, mean
    assert 0.9 <= statistics.pvariance(gaps) / mean ** 2 <= 1.1
