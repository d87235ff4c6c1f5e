"""A task whose settings ask for more memory than there is while it is built (Game of Life's task.size=100000
allocates its 10**10 cells) is refused in one line, as a model too large is, not a traceback
(harness/runners/build_checks.py, prepare_checked)."""

import pytest

from harness.config import compose
from harness.errors import UserError
from harness.runners import build_checks

ALLOCATOR = ("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you tried "
             "to allocate 80000000000 bytes. Error code 12 (Cannot allocate memory)")


def test_a_task_that_cannot_be_allocated_is_a_one_line_user_error(monkeypatch):
    def too_large(composed):
        raise RuntimeError(ALLOCATOR)

    monkeypatch.setattr(build_checks, "prepare_task", too_large)
    composed = compose("game_of_life", "stream_lstm", "smoke", ["task.size=100000"])
    with pytest.raises(UserError, match=r"game_of_life x stream_lstm: building the model and its data ran out of "
                                        r"memory \(74.5 GiB in one allocation\)"):
        build_checks.prepare_checked(composed)


def test_other_errors_of_a_task_are_not_taken_for_memory(monkeypatch):
    def broken(composed):
        raise RuntimeError("something else")

    monkeypatch.setattr(build_checks, "prepare_task", broken)
    with pytest.raises(RuntimeError, match="something else"):
        build_checks.prepare_checked(compose("game_of_life", "stream_lstm", "smoke", []))
