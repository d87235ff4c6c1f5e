"""The project's documents stay true to the code: every ``harness ...`` command of their shell code blocks and code
spans parses with the command line's own parser (no option abbreviated) and names known tasks, models, profiles,
datasets and reference runs, composes its config, and a sweep command passes its dry run; every ``make ...``
command names a target and variables of the Makefile; every ``python -m`` module of the project exists and takes
the options given it; and every repository path, sweep file, relative link, short source file name, option and run
id they name exists. Nothing trains and nothing starts Ray: seconds."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.doc_checks import (
    SWEEP_FILE,
    Command,
    block_commands,
    harness_problems,
    inline_commands,
    layout_paths,
    make_problems,
    makefile_targets,
    makefile_variables,
    missing_paths,
    pattern_matches,
    python_problems,
    unknown_options,
    unknown_run_ids,
    unknown_source_files,
)

DOCS = ("README.md", "docs/tutorial.md", "docs/gpu_runs.md", "docs/stacked_runs.md", "docs/contributing.md",
        *sorted(str(path.relative_to(ROOT)) for path in ROOT.glob("tasks/*/README.md")),
        *sorted(str(path.relative_to(ROOT)) for path in ROOT.glob("models/*/README.md")))
# what a document adds itself as its example, and may name before it exists
EXAMPLES = {"docs/contributing.md": frozenset({"parity", "gru"})}  # the guide's example task and model
# outputs git ignores, named as where a command writes them: not shipped
GENERATED = {"reports/out": "the HTML report `harness report` writes",
             "bench/": "the speed records `make perf` writes (`make perf-publish` copies them into results/perf/)"}
# a span that looks like a path and is none
NOT_PATHS = {"tasks/boxworld/README.md": {"harness/BoxWorld-v0": "a gymnasium environment id",
                                          "harness/BridgeBoxWorld-v0": "a gymnasium environment id"}}
# code spans with an ellipsis: words the reader fills in, so no parse of them can be right or wrong
UNCHECKED_SPANS = {
    "README.md": {"unshare -n sh -c 'ip link set lo up && exec make sweep SWEEP=...'": "any sweep file"},
    "docs/gpu_runs.md": {"harness publish <run_id> ...": "the run ids the reader publishes"},
    "docs/contributing.md": {"harness retest RUN task.test_<what>=...": "a task's own setting for its test data"},
}
# source files of other projects a document names by their own paths (the reference code it follows)
OTHER_PROJECTS = {
    "README.md": {"torch/optim/optimizer.py"},  # PyTorch's
    "tasks/babi/README.md": {"preprocessor/reader.py", "tpr_rnn/data_preprocess/preprocess.py", "tpr_rnn_graph.py"},
    "tasks/boxworld/README.md": {"env/bridge_boxworld.py", "pycolab/examples/research/box_world/box_world.py"},
    "tasks/listops/README.md": {"lra_benchmarks/data/listops.py"},
    "tasks/pathfinder/README.md": {"lra_benchmarks/data/pathfinder.py", "snakes.py", "snakes2.py"},
}
# run ids that are no reference runs, and why a document names them
OTHER_RUNS = {
    "docs/tutorial.md": {"babi-tpr_rnn-smoke-s0-24946bbf", "babi-tpr_rnn-smoke-s0-40efef86",
                         "babi-tpr_rnn-smoke-s1-9923be69", "babi-transformer-smoke-s0-ffcf2c64"},  # the reader's own
    "tasks/cartpole/README.md": {"cartpole-mlp1-cpu-s0-35c4c019"},  # named as in the git history of results/
}

CHECKS = {"harness": harness_problems, "make": make_problems, "python": python_problems}


def commands(doc: str, program: str) -> list[Command]:
    """One program's commands in a document: its shell code blocks' and its code spans'."""
    text = (ROOT / doc).read_text()
    return [command for command in block_commands(text) + inline_commands(text)[0] if command.program == program]


def test_the_documents_give_commands_of_every_kind():
    """The readers find what they should: a checker that found nothing would pass every document."""
    readme = (ROOT / "README.md").read_text()
    assert len(block_commands(readme)) >= 30 and len(inline_commands(readme)[0]) >= 50
    found = {program: sum(len(commands(doc, program)) for doc in DOCS) for program in ("harness", "make", "python")}
    assert found["harness"] >= 80 and found["make"] >= 50 and found["python"] >= 30, found
    inline = [command for doc in DOCS for command in inline_commands((ROOT / doc).read_text())[0]]
    assert any(command.argv == ("runs", "--reference", "--stale") for command in inline)


@pytest.mark.parametrize("doc", DOCS)
def test_every_harness_command_parses_and_names_what_exists(doc):
    examples = EXAMPLES.get(doc, frozenset())
    assert [problem for command in commands(doc, "harness") for problem in harness_problems(command, examples)] == []


@pytest.mark.parametrize("doc", DOCS)
def test_every_make_command_names_a_target_and_variables_of_the_makefile(doc):
    examples = EXAMPLES.get(doc, frozenset())
    assert [problem for command in commands(doc, "make") for problem in make_problems(command, examples)] == []


@pytest.mark.parametrize("doc", DOCS)
def test_every_python_module_a_document_runs_exists(doc):
    assert [problem for command in commands(doc, "python") for problem in python_problems(command)] == []


@pytest.mark.parametrize("doc", DOCS)
def test_the_spans_left_unchecked_are_the_listed_ones(doc):
    assert inline_commands((ROOT / doc).read_text())[1].keys() == UNCHECKED_SPANS.get(doc, {}).keys()


@pytest.mark.parametrize("doc", DOCS)
def test_every_repository_path_and_link_a_document_names_exists(doc):
    missing = missing_paths((ROOT / doc).read_text(), ROOT / doc, tuple(GENERATED))
    assert sorted(set(missing) - NOT_PATHS.get(doc, {}).keys()) == []


@pytest.mark.parametrize("doc", DOCS)
def test_every_sweep_file_a_document_names_exists(doc):
    named = set(SWEEP_FILE.findall((ROOT / doc).read_text()))
    assert sorted(path for path in named if not pattern_matches(path)) == []


@pytest.mark.parametrize("doc", DOCS)
def test_every_run_id_a_document_names_is_a_reference_run(doc):
    assert unknown_run_ids((ROOT / doc).read_text()) == sorted(OTHER_RUNS.get(doc, set()))


@pytest.mark.parametrize("doc", DOCS)
def test_every_source_file_a_document_names_by_its_short_name_exists(doc):
    assert unknown_source_files((ROOT / doc).read_text(), ROOT / doc) == sorted(OTHER_PROJECTS.get(doc, set()))


@pytest.mark.parametrize("doc", DOCS)
def test_every_option_a_document_names_alone_is_taken_by_a_command_it_gives(doc):
    assert unknown_options((ROOT / doc).read_text()) == []


def test_a_wrong_short_name_or_option_is_caught():
    readme = (ROOT / "README.md").read_text()
    assert "(`rl_select.py`)" in readme and "`--trim`" in readme
    assert unknown_source_files(readme.replace("(`rl_select.py`)", "(`rl_selection.py`)"), ROOT / "README.md") == [
        "rl_selection.py", "torch/optim/optimizer.py"]
    assert unknown_options(readme.replace("`--trim`", "`--trimmed`")) == ["--trimmed"]
    assert unknown_options(readme.replace("`--format json`", "`--formats json`")) == ["--formats"]


def test_every_path_of_the_readmes_layout_exists():
    paths = layout_paths((ROOT / "README.md").read_text())
    assert {"harness/defaults.yaml", "harness/profiles/{smoke,cpu,paper}.yaml", "models/adapters/"} <= set(paths)
    assert [path for path in paths if not pattern_matches(path)] == []


def test_a_wrong_path_in_the_readmes_layout_is_caught():
    text = (ROOT / "README.md").read_text().replace("profiles/{smoke,cpu,paper}", "profiles/{smoke,cpu,papers}")
    assert [path for path in layout_paths(text) if not pattern_matches(path)] == [
        "harness/profiles/{smoke,cpu,papers}.yaml"]


def test_the_makefile_is_read_for_its_targets_and_variables():
    targets = makefile_targets()
    assert {"bench", "sweep", "perf-publish", "readme", "reproduce", "validate", "clean"} <= targets
    assert not {target for target in targets if "$" in target or target.startswith(".")}
    assert {"TASK", "MODEL", "SWEEP", "CELLS", "ONLY", "NAMES", "RUNS", "UNCHECKED", "MINUTES"} <= makefile_variables()


@pytest.mark.parametrize(("doc", "right", "wrong"), [
    ("README.md", ".venv/bin/harness runs --reference --stale", ".venv/bin/harness runs --reference --stal"),
    ("docs/contributing.md", "`harness runs --reference --stale`", "`harness runs --reference --sale`"),
    ("README.md", "`harness reproduce --unchecked\n[--minutes M]", "`harness reproduce --unchecked\n[--minute M]"),
    ("README.md", "`harness data fetch mnist`", "`harness data fetch mnst`"),
    ("README.md", "`harness bench`", "`harness bnch`"),
    ("README.md", 'ARGS="optim.lr=3e-4 task.babi_id=6"', 'ARGS="optim.lrr=3e-4 task.babi_id=6"'),
    ("README.md", 'ARGS="rl.algorithm=ppo"', 'ARGS="rl.algorithm=pp"'),
    ("README.md", "make perf-publish", "make perf-publsh"),
    ("README.md", 'make perf-publish NAMES="start', 'make perf-publish NAME="start'),
    ("README.md", "MODEL=predinet SEEDS=0,1,2", "MODEL=predinett SEEDS=0,1,2"),
    ("README.md", "make sweep SWEEP=sweeps/matrix_smoke.yaml", "make sweep SWEEP=sweeps/matrix_smok.yaml"),
    ("README.md", "ONLY=task.babi_id=1,8", "ONLY=task.babi_idx=1,8"),
    ("README.md", "--cells 'babi/*'     # part", "--cells 'bab/*'     # part"),
    ("README.md", "python -m tasks.babi.compare", "python -m tasks.babi.comparison"),
    ("README.md", "bench_tasks --memory factored", "bench_tasks --memories factored"),
    ("docs/contributing.md", "harness reproduce babi-tpr_rnn-cpu-s0-5fa37d5b",
     "harness reproduce babi-tpr_rnn-cpu-s0-5fa37d5c"),
    ("docs/stacked_runs.md", "`harness bench --seed N`", "`harness bench --sed N`"),
    ("tasks/cartpole/README.md", "TASK=cartpole MODEL=mlp_agent ", "TASK=cartpol MODEL=mlp_agent "),
    ("models/ll_rnn/README.md", "train.early_stop_patience=20`", "train.early_stopping_patience=20`"),
])
def test_a_misspelt_command_in_a_document_is_caught(doc, right, wrong):
    text = (ROOT / doc).read_text()
    assert right in text, right
    changed = text.replace(right, wrong, 1)
    read = set(block_commands(text) + inline_commands(text)[0])
    new = [command for command in block_commands(changed) + inline_commands(changed)[0] if command not in read]
    assert new, f"{wrong!r} is read as no command"
    assert [problem for command in new for problem in CHECKS[command.program](command)], f"{wrong!r} passed"


@pytest.mark.parametrize(("doc", "right", "wrong"), [
    ("README.md", "`tests/test_bad_inputs.py`", "`tests/test_bad_input.py`"),
    ("README.md", "`tasks/*/pairs/transformer.yaml`", "`tasks/*/pairs/transformers.yaml`"),
    ("docs/gpu_runs.md", "(stacked_runs.md)", "(stacked_run.md)"),
    ("README.md", "`sweeps/predinet_table1*.yaml`", "`sweeps/predinet_table2*.yaml`"),
])
def test_a_wrong_path_in_a_document_is_caught(doc, right, wrong):
    text = (ROOT / doc).read_text()
    assert right in text, right
    assert missing_paths(text.replace(right, wrong), ROOT / doc, tuple(GENERATED)), f"{wrong!r} passed"
