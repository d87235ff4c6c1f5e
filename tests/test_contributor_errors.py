"""The mistakes a contributor makes when adding a model or a task are one-line errors naming the file and key."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from harness.config import compose
from harness.data import TaskData, TensorDictDataset
from harness.errors import UserError
from harness.registry import REGISTRY, ModelSpec, Registry, _declared_in, load_entry
from harness.runners.build_checks import check_model_output
from tests.conftest import ROOT

GRU = """spec:
  name: gru
  shape: recurrent
  core: models.gru.core:GRUCore
  kinds: [supervised, rl]
config:
  model:
    name: gru
    hidden_size: 64
schema:
  model.hidden_size: {min: 1}
"""
PARITY = """spec:
  name: parity
  interface: sequence
  entry: tasks.parity.task:ParityTask
config:
  task:
    name: parity
    n_train: 10
profiles:
  smoke:
    task:
      n_train: 5
schema:
  task.n_train: {min: 1}
"""


def project(tmp_path: Path, gru: str = GRU, parity: str = PARITY) -> Registry:
    (tmp_path / "models" / "gru").mkdir(parents=True)
    (tmp_path / "tasks" / "parity").mkdir(parents=True)
    shutil.copy(ROOT / "models" / "adapters.yaml", tmp_path / "models" / "adapters.yaml")
    (tmp_path / "models" / "gru" / "gru.yaml").write_text(gru)
    (tmp_path / "tasks" / "parity" / "task.yaml").write_text(parity)
    return Registry(tmp_path)


def test_the_files_as_written_register(tmp_path):
    registry = project(tmp_path)
    assert registry.compatibility(registry.task("parity"), registry.model("gru")).ok


@pytest.mark.parametrize(("old", "new", "message"), [
    ("  core:", "  cores:", "gru.yaml: spec has unknown key 'cores' (did you mean 'core'?)"),
    ("[supervised, rl]", "[supervized, rl]", "gru.yaml: spec.kinds has 'supervized' (did you mean 'supervised'?)"),
    ("spec:", "specs:", "gru.yaml: unknown section(s) specs (did you mean 'spec'?)"),
])
def test_a_misspelt_model_spec_is_an_error_naming_file_and_key(tmp_path, old, new, message):
    registry = project(tmp_path, gru=GRU.replace(old, new, 1))
    with pytest.raises(UserError, match=re.escape(message)):
        registry.models  # noqa: B018


def test_a_misspelt_task_spec_key_or_a_second_task_of_one_name_is_an_error(tmp_path):
    registry = project(tmp_path, parity=PARITY.replace("  entry:", "  entry: x:Y\n  data_chek:", 1))
    with pytest.raises(UserError, match="task.yaml: spec has unknown key 'data_chek' \\(did you mean 'data_check'"):
        registry.tasks  # noqa: B018
    shutil.rmtree(tmp_path)
    (tmp_path / "tasks" / "other").mkdir(parents=True)
    (tmp_path / "tasks" / "other" / "task.yaml").write_text(PARITY)
    registry = project(tmp_path)
    with pytest.raises(UserError, match="task 'parity' is declared twice"):
        registry.tasks  # noqa: B018


def test_a_file_that_is_not_read_is_named_when_its_name_is_unknown(tmp_path):
    registry = project(tmp_path)
    (tmp_path / "tasks" / "parity" / "task.yaml").rename(tmp_path / "tasks" / "parity" / "parity.yaml")
    with pytest.raises(UserError, match="parity has no task.yaml"):
        Registry(tmp_path).task("parity")
    (tmp_path / "models" / "gru" / "gru.yaml").write_text(GRU.replace("name: gru\n  shape", "name: gru2\n  shape"))
    with pytest.raises(UserError, match="gru.yaml declares spec.name 'gru2'"):
        registry.model("gru")


def test_an_entry_that_does_not_exist_is_a_user_error():
    with pytest.raises(UserError, match="has no attribute 'LSTMCor' \\(did you mean 'LSTMCore'\\?\\)"):
        load_entry("models.lstm.core:LSTMCor")
    with pytest.raises(UserError, match="no module 'models.lstm.cor'"):
        load_entry("models.lstm.cor:LSTMCore")
    assert _declared_in(REGISTRY.task("babi").entry).endswith("tasks/babi/task.yaml: spec.entry")
    assert _declared_in(REGISTRY.model("lstm").core).endswith("models/lstm/lstm.yaml: spec.core")


def test_a_misspelt_profile_or_schema_key_fails_when_the_pair_composes():
    task = REGISTRY.task("listops")
    registry = Registry()
    registry.tasks  # noqa: B018
    from dataclasses import replace
    registry._tasks["listops"] = replace(task, profiles={**task.profiles, "smoek": {}})  # type: ignore[index]
    with pytest.raises(UserError, match="profiles.smoek is not a profile \\(did you mean 'smoke'\\?\\)"):
        compose("listops", "lstm", "smoke", registry=registry)
    registry._tasks["listops"] = replace(task, schema={**task.schema, "task.n_tran": {"min": 1}})  # type: ignore[index]
    with pytest.raises(UserError, match="schema entry 'task.n_tran' names no key .*did you mean 'task.n_train'"):
        compose("listops", "lstm", "smoke", registry=registry)


class Flat(nn.Module):
    def __init__(self, classes: int) -> None:
        super().__init__()
        self.out = nn.Linear(1, classes)

    def forward(self, tokens: torch.Tensor, length: torch.Tensor) -> torch.Tensor:
        return self.out(length.float().unsqueeze(1))


def test_a_model_whose_forward_returns_the_wrong_shape_is_refused_before_the_run():
    composed = compose("listops", "lstm", "smoke")
    split = TensorDictDataset({"tokens": torch.ones(3, 4, dtype=torch.long), "length": torch.full((3,), 4),
                               "target": torch.zeros(3, dtype=torch.long)})
    data = TaskData(train=split, val=split, test=split, info={"num_classes": 10}, source="")
    check_model_output(composed, SimpleNamespace(loaded=data, model=Flat(10)))
    model = Flat(7)
    state = torch.random.get_rng_state()
    with pytest.raises(UserError, match=r"model\(tokens, length\) returned \[2, 7\]; .* = \[2, 10\]"):
        check_model_output(composed, SimpleNamespace(loaded=data, model=model))
    assert torch.equal(state, torch.random.get_rng_state())


class Counting(Flat):
    """A model whose forward passes change its state, as MemN2N's schedule counts an evaluation then training as an
    epoch (models/memn2n/schedule.py)."""

    def __init__(self, classes: int) -> None:
        super().__init__(classes)
        self.evaluations = 0

    def forward(self, tokens: torch.Tensor, length: torch.Tensor) -> torch.Tensor:
        self.evaluations += not self.training
        return super().forward(tokens, length)


def test_the_check_of_a_models_output_leaves_the_model_as_it_was():
    composed = compose("listops", "lstm", "smoke")
    split = TensorDictDataset({"tokens": torch.ones(3, 4, dtype=torch.long), "length": torch.full((3,), 4),
                               "target": torch.zeros(3, dtype=torch.long)})
    data = TaskData(train=split, val=split, test=split, info={"num_classes": 10}, source="")
    model = Counting(10)
    check_model_output(composed, SimpleNamespace(loaded=data, model=model))
    assert model.evaluations == 0 and model.training  # the check ran on a copy, in eval mode



class Statements(nn.Module):
    """A bAbI reader: ``fixed`` flattens every statement slot (a fixed number of them, as the entity adapters
    mlp1, mlp2, PrediNet, MHA and 2-simplicial do), else it averages the slots, padding included (``masked``: the
    real statements only, as TPR-RNN and MemN2N read a story)."""

    def __init__(self, slots: int, classes: int, fixed: bool = False, masked: bool = False) -> None:
        super().__init__()
        self.fixed, self.masked = fixed, masked
        self.out = nn.Linear(slots if fixed else 1, classes)

    def forward(self, story: torch.Tensor, story_len: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        values = story.float().sum(-1)  # [B, T]
        if self.fixed:
            return self.out(values)
        if self.masked:
            return self.out((values.sum(1) / story_len.clamp(min=1)).unsqueeze(1))
        return self.out(values.mean(1, keepdim=True))


def cut_stories() -> TaskData:
    """Six stories of 1 to 6 statements padded to 6, handed out cut to each batch's longest
    (tasks.babi.joint.TrimmedStories, what task.trim_batches=true gives)."""
    from tasks.babi.joint import TrimmedStories

    lengths = torch.tensor([6, 5, 1, 4, 2, 3])
    story = (torch.arange(6).unsqueeze(0) < lengths.unsqueeze(1)).long().unsqueeze(-1).expand(6, 6, 3)  # [6, 6, 3]
    split = TrimmedStories({"story": story.contiguous(), "story_len": lengths,
                            "query": torch.ones(6, 3, dtype=torch.long), "target": torch.zeros(6, dtype=torch.long)})
    return TaskData(train=split, val=split, test=split, info={"num_classes": 4, "max_story_len": 6}, source="")


def test_a_model_that_reads_a_fixed_number_of_statements_is_refused_cut_batches_in_one_line(capsys):
    from harness.runners.build_checks import narrowest_examples

    composed, data = compose("babi", "tpr_rnn", "smoke"), cut_stories()
    assert narrowest_examples(data.val) == [2, 4]  # the shortest stories, whose batch is cut most
    with pytest.raises(UserError, match="on a batch cut to its longest story, where the padded batch runs: the model "
                                        "reads a fixed number of statements") as raised:
        check_model_output(composed, SimpleNamespace(loaded=data, model=Statements(6, 4, fixed=True)))
    assert len(str(raised.value).splitlines()) == 1
    check_model_output(composed, SimpleNamespace(loaded=data, model=Statements(6, 4, masked=True)))
    assert capsys.readouterr().out == ""  # the same output either way: nothing to say
    check_model_output(composed, SimpleNamespace(loaded=data, model=Statements(6, 4)))
    assert "note: tpr_rnn's output on a batch cut to its longest story differs" in capsys.readouterr().out


class ToyParity:
    """A generated ``sequence`` task whose ``load()`` breaks the interface's contract as ``task.broken`` says."""

    def __init__(self, cfg: object) -> None:
        self.cfg = cfg.task  # type: ignore[attr-defined]
        self.broken = str(self.cfg.broken)
        if self.broken == "init_typo":
            self.cfg.brokn  # noqa: B018  a key no file defines

    def describe_data(self) -> dict[str, str] | None:
        return None if self.broken == "describe_none" else {"source": "toy", "fingerprint": self.broken}

    def load(self) -> object:
        if self.broken == "load_typo":
            self.cfg.n_tran  # noqa: B018
        tokens, length, target = torch.ones(8, 4, dtype=torch.long), torch.full((8,), 4), torch.arange(8) % 2
        info: dict[str, int] | None = {"max_len": 4, "vocab_size": 3, "num_classes": 2}
        if self.broken == "float_target":
            target = target.float()
        if self.broken == "column_target":
            target = target.unsqueeze(1)
        if self.broken == "label_2":
            target = target + 1  # 1..2 of 2 classes
        if self.broken == "no_max_len":
            del info["max_len"]  # type: ignore[union-attr]
        if self.broken == "info_none":
            info = None
        split = TensorDictDataset({"tokens": tokens, "length": length, "target": target})
        if self.broken == "dict":
            return {"train": split, "val": split, "test": split, "info": info}
        return TaskData(train=split, val=split, test=split, info=info, source="toy")  # type: ignore[arg-type]


@pytest.fixture
def toy_parity(monkeypatch: pytest.MonkeyPatch) -> str:
    from harness.registry import TaskSpec

    spec = TaskSpec(name="toy_parity", title="", interface="sequence", kind="supervised",
                    entry="tests.test_contributor_errors:ToyParity",
                    config={"task": {"name": "toy_parity", "broken": "none"}},
                    schema={"task.broken": {"choices": ["none", "float_target", "column_target", "no_max_len",
                                                        "info_none", "dict", "init_typo", "describe_none",
                                                        "load_typo", "label_2"]}})
    monkeypatch.setitem(REGISTRY._extra_tasks, spec.name, spec)
    return spec.name


@pytest.mark.parametrize(("broken", "message"), [
    ("float_target", "task toy_parity, train split: 'target' is float32 [] per example; the target of a supervised "
                     "task is int64 [] per example"),
    ("column_target", "'target' is int64 [1] per example; the target of a supervised task is int64 [] per example"),
    ("no_max_len", "task toy_parity: its info has no max_len (it gives vocab_size, num_classes); the info of a "
                   "'sequence' task gives max_len, vocab_size, num_classes"),
    ("info_none", "task toy_parity: load() gave info as NoneType"),
    ("dict", "task toy_parity: load() returned dict; it returns harness.data.TaskData("),
    ("label_2", "task toy_parity: the train split has labels 1..2, outside the task's 2 classes (0..1, "
                "info['num_classes']): its data file is malformed, or its load() gives wrong targets or num_classes"),
])
def test_a_task_whose_data_breaks_the_contract_is_one_line_before_the_run(broken, message, toy_parity, tmp_path,
                                                                          capsys):
    from harness.cli import main

    runs = tmp_path / "runs"
    assert main(["bench", "--task", toy_parity, "--model", "lstm", "--profile", "smoke", "--runs-dir", str(runs),
                 "task.broken=none"]) == 0  # the toy task as written trains
    shutil.rmtree(runs)
    capsys.readouterr()
    for command in ("validate", "bench"):
        code = main([command, "--task", toy_parity, "--model", "lstm", "--profile", "smoke", "--runs-dir", str(runs),
                     f"task.broken={broken}"])
        err = capsys.readouterr().err
        assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
        assert message in err, err
        assert not runs.exists()


@pytest.mark.parametrize(("gru", "parity", "message"), [
    (GRU.replace("    hidden_size: 64", "    hidden_size: 64\n    act: tanh"), PARITY,
     "gru.yaml: config key 'model.act' defaults to a string and declares no type; add it to its `schema` section"),
    (GRU, PARITY.replace("    n_train: 10", "    n_train: 10\n    limit: null"),
     "parity/task.yaml: config key 'task.limit' defaults to null and declares no type; add it to its `schema`"),
])
def test_an_untyped_key_names_the_file_that_defines_it(tmp_path, gru, parity, message):
    registry = project(tmp_path, gru=gru, parity=parity)
    with pytest.raises(UserError, match=re.escape(message)):
        compose("parity", "gru", "smoke", registry=registry)


class Returning(Flat):
    """Logits made integer, NaN, or a forward that fails, as a core whose out_dim is not what it returns makes the
    adapter's classifier fail."""

    def __init__(self, classes: int, how: str) -> None:
        super().__init__(classes)
        self.how = how

    def forward(self, tokens: torch.Tensor, length: torch.Tensor) -> torch.Tensor:
        logits = super().forward(tokens, length)
        if self.how == "fails":
            return self.out(logits)  # [B, 10] into Linear(1, 10)
        return logits.long() if self.how == "long" else logits * float("nan")


@pytest.mark.parametrize(("how", "message"), [
    ("long", r"model\(tokens, length\) returned int64 \[2, 10\]; a supervised model returns float logits"),
    ("nan", r"model\(tokens, length\) returned NaN logits on two validation examples, before any training"),
    ("fails", r"model\(tokens, length\) raised RuntimeError: mat1 and mat2 shapes cannot be multiplied .*; it "
              r"reads sequence through models/adapters.yaml, so check its core \(models.lstm.core:LSTMCore\)"),
])
def test_integer_or_nan_logits_are_refused_and_a_failing_adapted_model_points_at_its_core(how, message):
    composed = compose("listops", "lstm", "smoke")
    split = TensorDictDataset({"tokens": torch.ones(3, 4, dtype=torch.long), "length": torch.full((3,), 4),
                               "target": torch.zeros(3, dtype=torch.long)})
    data = TaskData(train=split, val=split, test=split, info={"num_classes": 10}, source="")
    with pytest.raises(UserError, match=message):
        check_model_output(composed, SimpleNamespace(loaded=data, model=Returning(10, how)))


NO_CORE = GRU.replace("  core: models.gru.core:GRUCore\n", "")


@pytest.mark.parametrize(("gru", "message"), [
    (NO_CORE, "gru.yaml: gru reads no interface, so it runs on no task: the recurrent adapters of "
              "models/adapters.yaml need a sequence core (spec.core: module:Class)"),
    (NO_CORE.replace("shape: recurrent", "shape: agent").replace("[supervised, rl]", "[supervised]"),
     "gru.yaml: gru reads no interface, so it runs on no task: no agent adapter of models/adapters.yaml serves "
     "supervised tasks"),
])
def test_a_model_that_reads_no_interface_is_an_error_naming_what_it_lacks(tmp_path, gru, message):
    registry = project(tmp_path, gru=gru)
    with pytest.raises(UserError, match=re.escape(message)):
        registry.models  # noqa: B018


class ToyCore(nn.Module):
    """A sequence core as a contributor may get it wrong (``model.mistake``): another constructor, a config key
    no file defines, no ``out_dim``."""

    def __init__(self, cfg: object, info: object = None) -> None:
        super().__init__()
        mistake = str(cfg.mistake)  # type: ignore[attr-defined]
        if mistake == "signature" and info is None:
            raise TypeError("ToyCore.__init__() missing 1 required positional argument: 'info'")
        self.in_dim = int(cfg.hiden_size if mistake == "typo" else cfg.hidden_size)  # type: ignore[attr-defined]
        if mistake != "no_out_dim":
            self.out_dim = self.in_dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return x[:, 0]


@pytest.mark.parametrize(("mistake", "message"), [
    ("signature", "TypeError: ToyCore.__init__() missing 1 required positional argument: 'info'"),
    ("typo", "ConfigAttributeError: Key 'hiden_size' is not in struct"),
    ("no_out_dim", "AttributeError: 'ToyCore' object has no attribute 'out_dim'"),
])
def test_a_core_that_cannot_be_built_is_one_line_before_the_run(mistake, message, toy_parity, monkeypatch, tmp_path,
                                                                  capsys):
    from harness.cli import main
    from harness.registry import with_adapters

    spec = ModelSpec(name="toy_core", title="", shape="recurrent", interfaces={}, kinds=("supervised",),
                     core="tests.test_contributor_errors:ToyCore",
                     config={"model": {"name": "toy_core", "hidden_size": 8, "mistake": "none"}},
                     schema={"model.mistake": {"choices": ["none", "signature", "typo", "no_out_dim"]}})
    monkeypatch.setitem(REGISTRY._extra_models, spec.name, with_adapters(spec, REGISTRY.adapters))
    runs = tmp_path / "runs"
    args = ["bench", "--task", toy_parity, "--model", "toy_core", "--profile", "smoke", "--runs-dir", str(runs)]
    assert main([*args, "model.mistake=none"]) == 0  # the core as written trains
    shutil.rmtree(runs)
    capsys.readouterr()
    assert main([*args, f"model.mistake={mistake}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: toy_core (models.adapters.sequence_readers:TokenSequenceModel) on task toy_parity "
                          "could not be built: ") and err.count("\n") == 1, err
    assert message in err and "builds its core (tests.test_contributor_errors:ToyCore) as Core(cfg.model)" in err
    # a key that no file defines says so, rather than leaving the reader to match it against in_dim and out_dim
    assert ("reads a config key that no file defines (a model's keys are under `model` in its model file)"
            in err) == (mistake == "typo"), err
    assert not runs.exists()


def test_a_model_setting_that_does_not_suit_the_task_names_the_pair_file_to_set_it_in(monkeypatch, env, capsys):
    from harness.cli import main
    from harness.registry import with_adapters

    spec = ModelSpec(name="toy_core", title="", shape="recurrent", interfaces={}, kinds=("supervised",),
                     core="tests.test_contributor_errors:ToyCore",
                     config={"model": {"name": "toy_core", "hidden_size": 8, "mistake": "none"}},
                     schema={"model.mistake": {"choices": ["none"]}})
    monkeypatch.setitem(REGISTRY._extra_models, spec.name, with_adapters(spec, REGISTRY.adapters))
    assert main(["validate", "--task", "pathfinder", "--model", "toy_core", "--profile", "smoke"]) == 2
    err = capsys.readouterr().err
    assert err == ("error: toy_core cannot be built from this config: model.patch_size (6) must divide the 32x32 "
                   "image; set it for this pair in tasks/pathfinder/pairs/toy_core.yaml (config: {model: ...}, as "
                   "tasks/pathfinder/pairs/ll_rnn.yaml does) or on the command line\n")


@pytest.mark.parametrize(("broken", "message"), [
    ("init_typo", "task toy_parity (tests.test_contributor_errors:ToyParity) could not be built: ConfigAttributeError: "
                  "Key 'brokn' is not in struct"),
    ("describe_none", "could not be built: AttributeError: 'NoneType' object has no attribute 'get'; a task is "
                      "built as Task(cfg)"),
    ("load_typo", "task toy_parity (tests.test_contributor_errors:ToyParity): load() reads a config key that no file "
                  "defines: Key 'n_tran' is not in struct"),
])
def test_a_task_that_cannot_be_built_or_misreads_its_config_is_one_line(broken, message, toy_parity, tmp_path,
                                                                        capsys):
    from harness.cli import main

    runs = tmp_path / "runs"
    code = main(["bench", "--task", toy_parity, "--model", "lstm", "--profile", "smoke", "--runs-dir", str(runs),
                 f"task.broken={broken}"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    assert not runs.exists()


@pytest.mark.parametrize(("where", "old", "new", "message"), [
    ("gru", "models.gru.core:GRUCore", "models.gru.core.GRUCore",
     "gru.yaml: spec.core 'models.gru.core.GRUCore' is not of the form 'package.module:Name'"),
    ("parity", "tasks.parity.task:ParityTask", "tasks/parity/task.py:ParityTask",
     "task.yaml: spec.entry 'tasks/parity/task.py:ParityTask' is not of the form 'package.module:Name'"),
])
def test_a_malformed_entry_is_refused_when_the_registry_reads_it_before_anything_is_imported(tmp_path, where, old,
                                                                                             new, message):
    files = {"gru": GRU, "parity": PARITY}
    files[where] = files[where].replace(old, new, 1)
    assert files[where] != {"gru": GRU, "parity": PARITY}[where]
    registry = project(tmp_path, **files)
    with pytest.raises(UserError, match=re.escape(message)):
        registry.models  # noqa: B018
        registry.tasks  # noqa: B018
