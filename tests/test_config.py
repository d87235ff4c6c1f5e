from dataclasses import replace

import pytest

from harness.config import compose, run_id
from harness.errors import UserError


def test_layers_compose_in_order():
    cfg = compose("babi", "tpr_rnn", "cpu").cfg
    assert cfg.optim.name == "tf1_nadam"  # model layer over harness defaults
    assert cfg.train.max_epochs == 30  # model's cpu profile
    assert cfg.task.babi_id == 1  # task layer
    smoke = compose("babi", "tpr_rnn", "smoke").cfg
    assert smoke.train.max_epochs == 2 and smoke.train.limit_train_batches == 4  # harness smoke profile
    assert smoke.task.generator_train_questions == 500  # task's smoke profile
    cfg = compose("babi", "tpr_rnn", "smoke", ["train.max_epochs=7", "task.babi_id=6", "optim.lr=3e-4"]).cfg
    assert (cfg.train.max_epochs, cfg.task.babi_id, cfg.optim.lr) == (7, 6, 3e-4)  # overrides last


def test_run_id_is_stable_and_follows_the_config():
    a = compose("babi", "tpr_rnn", "smoke").cfg
    b = compose("babi", "tpr_rnn", "smoke").cfg
    c = compose("babi", "tpr_rnn", "smoke", ["optim.lr=3e-4"]).cfg
    assert run_id(a) == run_id(b) != run_id(c)
    assert run_id(compose("babi", "tpr_rnn", "smoke", ["seed=3"]).cfg).startswith("babi-tpr_rnn-smoke-s3-")


@pytest.mark.parametrize(("section", "key", "other"), [("train", "max_steps", "5"), ("task", "trim_batches", "true")])
def test_a_key_added_later_stays_out_of_the_run_id_at_its_neutral_value(section, key, other):
    """``train.max_steps: null`` and ``task.trim_batches: false`` (added after runs were stored) leave the id a
    config had before the key existed; another value is another run."""
    from omegaconf import OmegaConf

    from harness.config import NEUTRAL_ADDED_KEYS, config_hash

    cfg = compose("babi", "tpr_rnn", "smoke").cfg
    assert cfg[section][key] == NEUTRAL_ADDED_KEYS[f"{section}.{key}"]
    before = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    del before[section][key]  # the config as composed before the key existed
    assert config_hash(cfg) == config_hash(before)
    assert run_id(compose("babi", "tpr_rnn", "smoke", [f"{section}.{key}={other}"]).cfg) != run_id(cfg)
    assert cfg[section][key] == NEUTRAL_ADDED_KEYS[f"{section}.{key}"]  # the hash left the config as it was


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("optim.lrr=1", "unknown config key 'optim.lrr' (did you mean 'optim.lr'?)"),
        ("nonsense=1", "unknown config key 'nonsense'"),
        ("train.max_epochs=many", "bad value for 'train.max_epochs' (command line): 'many' is not an int >= 1"),
        ("train.stop_at=yes", "bad value for 'train.stop_at' (command line): True is not a float (or null)"),
        ("train.max_time_s=abc", "bad value for 'train.max_time_s' (command line): 'abc' is not a float >= 0"),
        ("train.batch_size=0", "bad value for 'train.batch_size' (command line): 0 is not an int >= 1"),
        ("train.max_steps=0", "bad value for 'train.max_steps' (command line): 0 is not an int >= 1"),
        ("train.monitor=val/nope", "'val/nope' is not one of val/acc, val/loss"),
        ("model.memory=sparse", "'sparse' is not one of parallel, factored, dense"),
        ("optim.name=adagrad", "'adagrad' is not one of adam, adamw"),
        ("data.fingerprint=abc", "'data.fingerprint' is set by the harness"),
        ("train=3", "it is a section"),
        ("optim=null", "sets 'optim' to null; it is a section (set its keys, e.g. optim.name=...)"),
        ("task=null", "sets 'task' to null; it is a section (set its keys, e.g. task.babi_id=...)"),
        ("tracking=null", "sets 'tracking' to null; it is a section"),
        ("optim.lr=fast", "bad value for 'optim.lr'"),
        ("train.stop_at", "bad override 'train.stop_at'"),
    ],
)
def test_bad_overrides_name_the_key(override, message):
    with pytest.raises(UserError) as info:
        compose("babi", "tpr_rnn", "smoke", [override])
    assert message in str(info.value)


def test_unknown_profile():
    with pytest.raises(UserError, match="unknown profile 'smok' \\(did you mean 'smoke'\\?\\)"):
        compose("babi", "tpr_rnn", "smok")


def test_null_and_lists_accepted():
    cfg = compose("babi", "tpr_rnn", "smoke", ["train.max_time_s=null", "optim.betas=[0.8,0.9]"]).cfg
    assert cfg.train.max_time_s is None and list(cfg.optim.betas) == [0.8, 0.9]


def test_every_yaml_file_composes_and_every_key_is_typed():
    """harness list composes every pair at every profile; every key is typed by its default or declared."""
    from harness.config import check_registry

    assert check_registry() >= 50


def test_a_typo_in_a_task_file_fails_with_the_file_and_key(tmp_path):
    from harness.config import check_registry
    from harness.registry import Registry

    registry = Registry()
    task = registry.task("babi")
    config = {**task.config, "task": {**task.config["task"], "name": "babi_typo"}, "train": {"monitr": "val/acc"}}
    registry.add_task(replace(task, name="babi_typo", config=config))
    with pytest.raises(UserError, match="sets unknown config key 'train.monitr' \\(did you mean 'train.monitor'"):
        check_registry(registry)


@pytest.mark.parametrize(
    ("task", "model", "override", "message"),
    [
        ("game_of_life", "updater_extractor", "train.max_epochs=3",
         "section 'train' configures supervised runs, and this is a stepwise run (its sections: "),
        ("babi", "tpr_rnn", "rl.num_learners=3", "section 'rl' configures RL runs, and this is a supervised run"),
        ("boxworld", "predinet", "optim.lr=0.1",
         "section 'optim' configures supervised and stepwise runs, and this is an RL run"),
    ],
)
def test_a_key_of_another_kind_of_run_is_named_as_such(task, model, override, message):
    with pytest.raises(UserError, match=f"unknown config key '{override.split('=')[0]}': ") as caught:
        compose(task, model, "smoke", [override])
    assert message in str(caught.value)


def test_untyped_null_key_is_refused():
    from harness.registry import Registry

    registry = Registry()
    model = registry.model("lstm")
    registry.add_model(replace(model, name="lstm_untyped", config={"model": {**model.config["model"], "extra": None}}))
    with pytest.raises(UserError, match="'model.extra' defaults to null and declares no type"):
        compose("babi", "lstm_untyped", "smoke", registry=registry)


def test_rl_runs_carry_no_supervised_sections_and_supervised_runs_no_rl_sections():
    rl = compose("boxworld", "predinet", "cpu").cfg
    assert "optim" not in rl and "train" not in rl and "protocol" not in rl and "rl" in rl
    with pytest.raises(UserError, match="unknown config key 'optim.lr'"):
        compose("boxworld", "predinet", "cpu", ["optim.lr=0.1"])
    supervised = compose("relations_game", "predinet", "cpu").cfg
    assert "rl" not in supervised and "agent" not in supervised and supervised.optim.name == "sgd"


@pytest.mark.parametrize(
    ("task", "override", "message"),
    [
        ("game_of_life", "model.chunk_size=8", "'model.chunk_size' is read only on story, sequence, image, env or "
                                               "state_env tasks, and game_of_life is a stream task"),
        ("listops", "model.field_size=8", "'model.field_size' is read only on stream tasks, and listops is a sequence "
                                          "task"),
    ],
)
def test_a_model_key_its_reader_of_the_task_never_reads_is_refused(task, override, message):
    with pytest.raises(UserError, match="setting it would change the run id and nothing else") as caught:
        compose(task, "updater_extractor", "smoke", [override])
    assert message in str(caught.value)
    key = override.split("=")[0]
    other = "listops" if task == "game_of_life" else "game_of_life"
    assert compose(other, "updater_extractor", "smoke", [override]).cfg.model[key.split(".")[1]] == 8  # read there


def test_a_schema_entry_naming_an_unknown_interface_is_refused():
    from harness.schema import parse_entry

    with pytest.raises(UserError, match="has interfaces \\['strem'\\]; a list of task interfaces"):
        parse_entry("model.chunk_size", {"min": 1, "interfaces": ["strem"]}, "models/x.yaml")
