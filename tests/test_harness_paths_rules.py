"""Rules of the user-facing helpers of harness/errors.py and harness/paths.py, each stated by hand on a tiny input.

* ``did_you_mean`` suggests the one closest choice, or nothing when none is close; ``listed`` names the first
  ``shown`` names and how many more ("and N more" only when some are left out); ``counted`` puts the noun in the
  plural for every count but 1 (0 trials, 1 trial, 2 trials).
* ``shown_path``: a path inside ``$HARNESS_DATA_DIR`` or ``$HARNESS_CACHE_DIR`` is recorded relative to the variable
  (``$HARNESS_DATA_DIR/babi/x.txt``; the folder itself as the bare variable), inside the default folder relative
  to that folder as written, and anywhere else as given; ``data_relative`` is the path under the data folder, or
  the file's name for one outside it.
* ``check_data_dir``: a ``HARNESS_DATA_DIR`` that names no folder (nothing, or a file) is a one-line UserError;
  ``check_can_create_in`` refuses a path under a file, naming the file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import UserError, counted, did_you_mean, listed
from harness.paths import check_can_create_in, check_data_dir, data_relative, shown_path

# ---------------------------------------------------------------- harness/errors.py


def test_did_you_mean_names_the_closest_choice_and_nothing_for_a_far_one() -> None:
    assert did_you_mean("tpr_rn", ["tpr_rnn", "memn2n", "lstm"]) == " (did you mean 'tpr_rnn'?)"
    assert did_you_mean("lsmt", ["tpr_rnn", "memn2n", "lstm"]) == " (did you mean 'lstm'?)"
    # 'mnist' shares a few letters with 'memn2n' (ratio 0.36), too few to be a misspelling of it
    assert did_you_mean("mnist", ["tpr_rnn", "memn2n"]) == ""
    assert did_you_mean("anything", []) == ""


@pytest.mark.parametrize(("names", "shown", "want"), [
    (["a", "b"], 2, "a, b"),  # all shown: no "and 0 more"
    (["a", "b", "c"], 2, "a, b and 1 more"),
    (["a", "b", "c", "d", "e"], 2, "a, b and 3 more"),
    (["a"], 3, "a"),
])
def test_listed_says_how_many_more_only_when_some_are_left_out(names: list[str], shown: int, want: str) -> None:
    assert listed(names, shown) == want


@pytest.mark.parametrize(("n", "want"), [(0, "0 trials"), (1, "1 trial"), (2, "2 trials"), (11, "11 trials")])
def test_counted_is_singular_for_one_only(n: int, want: str) -> None:
    assert counted(n, "trial") == want


# ---------------------------------------------------------------- harness/paths.py


def test_a_path_inside_the_data_folder_is_shown_relative_to_its_variable(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    (data / "babi").mkdir(parents=True)
    monkeypatch.setenv("HARNESS_DATA_DIR", str(data))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    assert shown_path(data / "babi" / "qa1_train.txt") == "$HARNESS_DATA_DIR/babi/qa1_train.txt"
    assert shown_path(data) == "$HARNESS_DATA_DIR"  # the folder itself: no trailing "/."
    assert shown_path(tmp_path / "cache" / "listops" / "x.npz") == "$HARNESS_CACHE_DIR/listops/x.npz"
    outside = tmp_path / "elsewhere" / "x.txt"
    assert shown_path(outside) == str(outside)


def test_a_path_inside_the_default_cache_folder_is_shown_relative_to_that_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HARNESS_CACHE_DIR", raising=False)
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    # no variable set: the default folder as written, never a "$HARNESS_CACHE_DIR" that is not there
    assert shown_path(tmp_path / ".cache" / "harness" / "pathfinder" / "x.npz") == ".cache/harness/pathfinder/x.npz"


def test_data_relative_is_the_path_under_the_data_folder_or_the_name_outside_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    assert data_relative(tmp_path / "data" / "babi" / "en-10k" / "qa1_train.txt") == "babi/en-10k/qa1_train.txt"
    assert data_relative(tmp_path / "mine" / "qa1_train.txt") == "qa1_train.txt"


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_data_folder_variable_naming_no_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           kind: str) -> None:
    named = tmp_path / "data"
    if kind == "file":
        named.write_text("not a folder\n")
    monkeypatch.setenv("HARNESS_DATA_DIR", str(named))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(UserError, match=r"^HARNESS_DATA_DIR=.* is not a folder"):
        check_data_dir()


def test_a_folder_cannot_be_created_under_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("x\n")
    with pytest.raises(UserError, match=r"^--out here: .*blocker is a file, not a folder$"):
        check_can_create_in(blocker / "inside", "--out here")
    check_can_create_in(tmp_path / "new" / "deeper", "--out here")  # a folder that can be made: no error
