"""How the report spells settings and published figures: a setting that is unset in the config (``null``) or a
boolean reads as the config files write it, never as Python's ``None`` or ``True``."""

from __future__ import annotations

from pathlib import Path

from reports.settings import describe, differences
from reports.store import RunRecord
from tests.run_records import run_record


def _run(train: dict) -> RunRecord:
    return run_record(task="relations_game", model="mha", rel_path="x",
                      config={"task": {"name": "relations_game"}, "train": train})


def test_null_and_booleans_read_as_the_config_spells_them() -> None:
    settings = {"train.max_time_s": None, "train.shuffle": True}
    assert describe(settings) == "train.max_time_s = null; train.shuffle = true"
    assert differences(_run({"max_time_s": 1080, "shuffle": False}), settings) == [
        "max_time_s 1080 ≠ null", "shuffle false ≠ true"]
    assert differences(_run({"max_time_s": None, "shuffle": True}), settings) == []
    assert differences(_run({}), {"train.max_time_s": 600}) == ["max_time_s unset ≠ 600"]


def test_a_published_figure_reads_with_its_unit_after_the_number() -> None:
    """The page writes a fact's unit after its published text: a text that goes on past the number (a remark
    in brackets) read "≈ 90 (the only one of the five to reach 90) %"; the remark belongs in the note."""
    from reports.facts import fact_rows
    from reports.papers import load_papers

    papers = load_papers(Path(__file__).resolve().parents[1] / "reports" / "papers")
    for paper in papers:
        for fact in paper.facts:
            if fact.published is not None and fact.unit and fact.published_text:
                assert not fact.published_text.rstrip().endswith(")"), (paper.name, fact.id)
    predinet = next(paper for paper in papers if paper.name == "predinet")
    row = next(r for r in fact_rows(predinet.facts, [], Path("/nonexistent")) if r["id"] == "stage3_predinet")
    assert (row["published"], row["unit"]) == ("≈ 90", "%")


def test_steps_and_epochs_are_thousands_separated_like_every_other_count() -> None:
    """The runs table mixed "1606" and "14,664 (its curves, up to where it diverged)" in one column, and the run
    page's "steps / epochs" read "4458 / 16" where the rankings say "5,922 steps"."""
    from reports.index_tables import run_row
    from reports.run_progress import progress
    from reports.run_tables import stage_rows
    from reports.tables import TEST_ACC

    run = run_record(rel_path="x", results={"steps": 14664, "epochs": 16, "metrics": {"test/acc": 0.5}})
    assert progress(run) == {"steps": "14,664", "epochs": "16"}
    assert run_row(run, TEST_ACC)["steps"] == "14,664"
    rl = run_record(task="boxworld", model="mlp1", rel_path="x", results={"env_steps": 986218}, config={"rl": {}})
    assert run_row(rl)["steps"] == "986,218"
    assert progress(run_record(rel_path="x")) == {"steps": "–", "epochs": "–"}
    run.stages = {"1_scratch": {"status": "completed", "results": {"steps": 100000}}}
    assert stage_rows(run)[0]["steps"] == "100,000"


def test_a_stacked_run_page_names_its_stack_and_whose_wall_time_it_shows() -> None:
    """Three seeds trained as one stacked model share one wall time (56 min each on the index for the Relations
    Game's mha); the run page said nothing of the stack, so it read as one seed's time."""
    from reports.build import _stack

    stack = ["rg-mha-cpu-s0-a", "rg-mha-cpu-s1-b", "rg-mha-cpu-s2-c"]
    member = run_record(stack[1], task="relations_game", model="mha", rel_path="x", results={"stack": stack})
    text = _stack(member)
    assert text is not None and text.startswith("one of 3 seeds trained together as one stacked model, with "
                                                "rg-mha-cpu-s0-a, rg-mha-cpu-s2-c;")
    assert "wall time is the whole stack's" in text
    for alone in ({}, {"stack": [stack[0]]}, {"stack": None}):
        assert _stack(run_record(stack[0], model="m", rel_path="x", results=alone)) is None


def test_the_best_checkpoints_step_is_thousands_separated_too() -> None:
    from reports.build import _run_info, _stepwise_info

    best = {"metric": "val/acc", "value": 0.99, "step": 15250, "epoch": 15}
    run = run_record(model="m", rel_path="x", results={"best": best, "steps": 15931, "epochs": 16})
    assert _run_info(run)["best"] == "val/acc = 0.9900 at step 15,250, epoch 15"
    stepwise = run_record(task="world_of_numbers", model="m", rel_path="x", results={"best": best},
                          config={"stepwise": {"steps": 5}})
    assert _stepwise_info(stepwise, {})["best"] == "val/acc = 0.9900 at cycle 15,250"  # type: ignore[index]


def test_a_single_thread_is_singular_on_the_run_page():
    from reports.build import _device

    assert _device({"device": "cpu, 1 threads"}) == "cpu, 1 thread"
    assert _device({"device": "cpu, 1 threads (rl.num_gpus_per_learner=0)"}).startswith("cpu, 1 thread (")
    assert _device({"device": "cpu, 12 threads"}) == "cpu, 12 threads" and _device({}) == "–"


def test_the_runs_table_marks_a_stack_members_shared_wall_time():
    from reports.index_tables import _stack_mark

    def run(results: dict) -> RunRecord:
        return run_record("a-s0", task="relations_game", model="mha", rel_path="x", results=results)

    member, alone = run({"stack": ["a-s0", "a-s1", "a-s2"]}), run({})
    assert _stack_mark(member) == " (a stack of 3)" and _stack_mark(alone) == ""
