"""A toy experiment declared outside the repository's catalogue, as a
researcher's own would be: one row (ROW) and this package. The tests add it
with MPTCP_HARNESS_EXPERIMENTS=tests.toy and see it everywhere."""
from base.catalogue import Row

ROW = Row("toy", "counts to N, one run per number (a test's experiment)", "none (a test)", "sigcomm11",
          config="tests.toy.config:ToyConfig", run="tests.toy.experiment:run", records=("toy/*/run.json",), layout="toy/<n>/",
          figure="tests.toy.figure", machine=False)
