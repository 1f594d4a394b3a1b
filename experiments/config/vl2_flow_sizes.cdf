# A VL2-like flow-size distribution: a documented approximation, not the
# dataset. The paper (Fig. 13, §4.4) draws its closed-loop flows' sizes from
# the VL2 dataset (Greenberg et al., "VL2: A Scalable and Flexible Data
# Center Network", SIGCOMM 2009, §3.1 and its Fig. 2), which was never
# published as a table. This CDF is ours, built to hold what that section
# states about the measured flows:
#   - most flows are small, a few KB;
#   - more than 99 % of flows are smaller than 100 MB   (here 99.1 %);
#   - more than 90 % of the bytes are in flows between 100 MB and 1 GB
#     (here 91.4 %), and flows above a few GB are rare  (here none above 1 GB).
# Its mean is 5.4 MB. tests/test_scheduling.py checks these three shares.
#
# Sizes are at the data centre's rate, 1 Gb/s: the scheduling experiment
# scales them to its link rate (experiments/config/scheduling.py).
#
# <size in bytes> <cumulative fraction of flows>   (format: base/flowsizes.py)
1000        0.05
2000        0.30
10000       0.60
100000      0.80
1000000     0.95
10000000    0.988
100000000   0.991
1000000000  1.0
