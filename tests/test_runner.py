"""The experiment contract (experiments/runner.py): a toy experiment of a few
lines, one point and one flow, runs through the runner unchanged: progress,
a staged and committed run.json with the common fields, and its flags."""
import json

from experiments.config import LinkParams
from emulator.network import Network
from experiments.runner import Experiment, Runner
from tests.conftest import needs_root
from tests.hostpair import TwoHostsOneRouter
from dctopo.workloads import Flow


class OneFlow(Experiment):
    """Plain TCP from h0 to h1 for 2 s; flagged when nothing arrived. Its
    config is just the results folder."""
    name = "one_flow"

    def points(self):
        return ["only"]

    def network_key(self, point):
        return "pair"

    def network(self, key):
        return Network(TwoHostsOneRouter(), LinkParams(bw_mbps=10), cc="reno")

    def describe(self, point):
        return f"one flow, point {point}"

    def run_dir(self, point):
        return self.cfg / point

    def run_point(self, net, point, folder):
        [out] = net.driver.run(net.driver.endpoints([Flow("h0", "h1")]), False, 2, folder / "iperf")
        return {"goodput_mbps": out.goodput_mbps, "flags": [] if out.goodput_mbps > 0 else ["zero_goodput_flow"]}

    def summarise(self, record):
        return f"{record['goodput_mbps']:.1f} Mb/s"


@needs_root
def test_a_toy_experiment_runs_through_the_runner(tmp_path, no_leftovers):
    said = []
    written = Runner(OneFlow(tmp_path, say=said.append), say=said.append).run()
    assert written == [tmp_path / "only"]
    record = json.loads((tmp_path / "only" / "run.json").read_text())
    assert record["experiment"] == "one_flow" and record["schema"] == 1
    assert {"kernel", "started_at", "finished_at"} <= set(record)
    assert record["valid"] is True and record["flags"] == [] and record["goodput_mbps"] > 5
    assert said[0] == "[1/1] one flow, point only (0 left)", said
    assert said[-1].startswith("one_flow: 1 runs in "), said
    # Nothing but the committed run is left: no staging folder.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["only"]
