"""`run_mptcp.sh model`: the subflow model of paper Fig. 6 computed for the
configured FatTree sizes, written as one record (results/model/run.json)
that plot.py draws. No network: the model is arithmetic (dctopo/subflow_model.py)."""
from __future__ import annotations

import time

from dctopo import subflow_model
from base import records
from experiments.config.model import ModelConfig
from experiments.runner import iso
from experiments.staging import RunStage


def write_model(cfg: ModelConfig, say=print) -> None:
    out = records.model_run(cfg.results)
    with RunStage(out) as stage:
        record = {"schema": records.SCHEMA, "experiment": cfg.experiment, "started_at": iso(time.time()), "config": cfg.to_record(),
                  "table": subflow_model.variance_table(cfg.ks, cfg.max_subflows),
                  "flags": [], "valid": True}
        stage.commit(record)
    say(f"model: V_p and V_c for k = {', '.join(map(str, cfg.ks))}, m = 1..{cfg.max_subflows}: {out}")
