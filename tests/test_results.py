"""A run folder is replaced atomically and never half-written."""
import json

import pytest

from experiments.staging import RunStage


def refuse_exchange(monkeypatch):
    """What 9p (the guests' shared folders) answers to RENAME_EXCHANGE."""
    import errno
    from experiments import staging
    monkeypatch.setattr(staging, "renameat2_exchange", lambda a, b: errno.EINVAL)


@pytest.mark.parametrize("exchange", ["renameat2", "refused"])
def test_commit_replaces_the_old_run(tmp_path, monkeypatch, exchange):
    """Atomically where the filesystem swaps folders; in three renames
    where it refuses (9p, vfat, minix)."""
    if exchange == "refused":
        refuse_exchange(monkeypatch)
    final = tmp_path / "ft4" / "one_to_one" / "flows8"
    with RunStage(final) as stage:
        (stage.path / "cpu.csv").write_text("old\n")
        stage.commit({"n": 1})
    with RunStage(final) as stage:
        stage.commit({"n": 2})
    assert json.loads((final / "run.json").read_text()) == {"n": 2}
    assert not (final / "cpu.csv").exists()           # nothing of the old run mixed in
    assert [p.name for p in final.parent.iterdir()] == ["flows8"]


def test_interrupted_run_leaves_the_old_one_intact(tmp_path):
    final = tmp_path / "flows2"
    with RunStage(final) as stage:
        stage.commit({"n": 1})
    before = (final / "run.json").read_bytes()
    with pytest.raises(KeyboardInterrupt):
        with RunStage(final) as stage:
            (stage.path / "cpu.csv").write_text("partial\n")
            raise KeyboardInterrupt
    assert (final / "run.json").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["flows2"]


def test_stage_of_a_killed_harness_is_removed(tmp_path):
    dead = tmp_path / ".flows8.partial-999999999"      # no such process
    dead.mkdir()
    with RunStage(tmp_path / "flows8") as stage:
        stage.commit({"n": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flows8"]



def test_old_run_moved_aside_by_a_killed_harness_is_put_back(tmp_path):
    aside = tmp_path / ".flows8.old-999999999"         # killed between the renames
    aside.mkdir()
    (aside / "run.json").write_text('{"n": 1}')
    (tmp_path / ".flows8.partial-999999999").mkdir()
    with RunStage(tmp_path / "flows8"):
        pass                                          # interrupted before commit
    assert json.loads((tmp_path / "flows8" / "run.json").read_text()) == {"n": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["flows8"]
