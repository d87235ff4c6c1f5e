"""Bounds of harness/schema.yaml that keep a run from crashing: a seed numpy cannot take (2**32 and above; up to
2**31 - 1 is allowed, room for a curriculum's stage offsets) is refused in one line wherever seeds are given, instead
of a traceback from seed_everything; a thread count far past any machine's cores, instead of a crash as torch starts
them."""

from pathlib import Path

import pytest

from harness.cli import _seed_list
from harness.config import compose, max_seed
from harness.errors import UserError
from harness.runners.sweep_file import load_sweep
from harness.schema import _num

TOO_LARGE = 2**32


def test_the_largest_seed_is_one_numpy_takes_with_room_for_a_curriculum():
    assert max_seed() == 2**31 - 1


def test_a_seed_override_too_large_is_refused_with_its_bound_written_in_full():
    with pytest.raises(UserError, match=r"bad value for 'seed' \(command line\): 4294967296 is not an int in "
                                        r"\[0, 2147483647\]"):
        compose("babi", "lstm", "smoke", [f"seed={TOO_LARGE}"])
    assert compose("babi", "lstm", "smoke", [f"seed={max_seed()}"]).cfg.seed == max_seed()


def test_seeds_on_the_command_line_are_refused_above_the_bound():
    with pytest.raises(UserError, match=r"--seeds 0,4294967296: a seed is at most 2147483647, got 4294967296"):
        _seed_list(f"0,{TOO_LARGE}")
    assert _seed_list(f"0,{max_seed()}") == [0, max_seed()]


def test_a_sweep_file_seed_above_the_bound_is_refused(tmp_path: Path):
    path = tmp_path / "big.yaml"
    path.write_text(f"name: big\ntask: babi\nprofile: smoke\nmodels: [lstm]\nseeds: [0, {TOO_LARGE}]\n")
    with pytest.raises(UserError, match=r"'seeds' holds 4294967296; a seed is at most 2147483647"):
        load_sweep(path)


def test_bounds_read_as_written():
    assert (_num(2147483647), _num(100), _num(0.5), _num(1e-8)) == ("2147483647", "100", "0.5", "1e-08")


@pytest.mark.parametrize("key", ["train.threads", "stepwise.threads"])
def test_a_thread_count_no_machine_starts_is_refused(key):
    from harness.config import key_types

    task, model = ("babi", "lstm") if key.startswith("train") else ("lstm_recall", "stream_lstm")
    with pytest.raises(UserError, match=rf"bad value for '{key}' \(command line\): 100000 is not an int in "
                                        r"\[1, 1024\] \(or null\)"):
        compose(task, model, "smoke", [f"{key}=100000"])
    assert key_types(task, model)[key].maximum == 1024
