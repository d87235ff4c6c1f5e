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


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("optim.lrr=1", "unknown config key 'optim.lrr' (did you mean 'optim.lr'?)"),
        ("nonsense=1", "unknown config key 'nonsense'"),
        ("train.max_epochs=many", "bad value for 'train.max_epochs': 'many' is not a int"),
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
