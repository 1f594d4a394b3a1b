"""The capacity guard: can this machine's fabric carry what a sweep asks for?

Every packet that crosses a link costs CPU on an emulator (a veth hop, a
routing or switching decision, a shaper): the 2013 reproduction found results
turn to noise once the CPU saturates (the CS244 '13 reproduction). So before a sweep:

  demand     = sum over the traffic matrix's flows of
               (link rate x the flow's fair share x links on its path), in Gb/s
               crossing links: what the fabric has to forward if every flow
               gets its optimal rate;
  predicted  = idle CPU + demand x cost, in % of all cores;

where the cost comes from what this machine measured:

  - for a configuration this machine has run (FatTree arity, workload, link
    rate), the median of what its MPTCP-8 runs cost per Gbit-hop *demanded*:
    the prediction is then the CPU those runs measured. The calibration is
    such a configuration (FatTree(4) one_to_one at 10 Mb/s, the README's quick start), and
    every sweep's MPTCP-8 runs that carry no flag (valid) add
    theirs (`learn`);
  - where this machine's MPTCP-8 runs of the configuration only ever
    saturated the CPU, at least what they measured: saturation caps the CPU a
    run can show, so its cost is a floor. Without this a configuration the
    guard wrongly accepted would be accepted again and saturate again
    (FatTree(8) one_to_one at 2 Mb/s here: predicted 68 %, measured 88.5 %);
  - for any other, the cost per Gbit-hop *delivered* at the calibration's rate,
    as if every flow got its optimal rate. No run gets there (MPTCP-8 on
    FatTree(4) delivers 73-89 %), so this overestimates, by design, where
    nothing has been measured. Per-packet costs are higher at low rates (less
    batching), so it is optimistic well below the calibration's rate, and
    the runs' own `cpu_saturated` flag stays the final word.

Above CPU_BUDGET_PCT the sweep is refused with the largest link rate that fits
by the same rule, unless `--force`, whose runs then carry `over_capacity`.

One noisy minute must not decide for good. The calibration waits for a quiet
machine, measures CALIBRATION_REPEATS runs, and is cached only if the machine
was quiet before and during it (no foreign CPU load, no steal) and another
repeat agrees with the median; otherwise it serves this invocation only.
Each cost is the median of the last OBSERVATIONS_KEPT observations of its
configuration. `--recalibrate` measures again.

The modules, each using only those before it: calibration.py (what a
calibration and an observation are), prediction.py (demand, prediction,
verdict), cache.py (the cache and what runs teach it), measurement.py (the
calibration run and the cost of a sweep's runs). The names below are the
guard's interface; the tunables stay in the module that reads them.
"""
from experiments.capacity.cache import cache_path, learn, load, save
from experiments.capacity.calibration import Calibration, CalibrationError, Observation, machine
from experiments.capacity.measurement import (calibrate, calibration_for, cpu_load,
                                              median_is_seconded, observed_costs, run_cost,
                                              saturated_run, wait_for_quiet)
from experiments.capacity.prediction import (Verdict, cost_for, demand_gbit_hops, judge,
                                             nice_rate_at_most, predict_pct)

__all__ = ["Calibration", "CalibrationError", "Observation", "Verdict", "cache_path",
           "calibrate", "calibration_for", "cost_for", "cpu_load", "demand_gbit_hops", "judge",
           "learn", "load", "machine", "median_is_seconded", "nice_rate_at_most",
           "observed_costs", "predict_pct", "run_cost", "saturated_run", "save",
           "wait_for_quiet"]
