"""Rules of a source file's digest (harness/provenance.py): docstrings (of a module, class, function or coroutine)
and comments do not count, every statement does; and only a completed run's numbers can be stale."""

from __future__ import annotations

from harness.provenance import run_code_status, text_digest


def test_docstrings_of_every_kind_of_definition_and_comments_do_not_count():
    for head in ("def f():", "async def f():", "class f:"):
        plain = f"{head}\n    x = 1\n"
        assert text_digest(f'{head}\n    """What it does."""\n    x = 1  # a note\n') == text_digest(plain), head
    assert text_digest('"""A module."""\nx = 1\n') == text_digest("x = 1\n")


def test_every_statement_counts_a_first_one_that_is_no_docstring_too():
    base = text_digest("def f():\n    return 1\n")
    for changed in ("def f():\n    print()\n    return 1\n", "def f():\n    ...\n    return 1\n",
                    "def f():\n    return 2\n",
                    'def f():\n    x = 1\n    "kept: not the first statement"\n    return 1\n'):
        assert text_digest(changed) != base, changed


def test_only_a_completed_runs_code_can_be_stale():
    recorded = {"code": {"files": {"harness/optim.py": "0123456789abcdef"}}}
    assert run_code_status({"status": "completed", **recorded}).stale == ["harness/optim.py"]
    assert run_code_status({"status": "failed", **recorded}).stale == []


def test_a_gpu_run_records_where_its_float32_arithmetic_may_round_to_tf32(monkeypatch):
    """On a GPU the machine record says which float32 operations may run in TF32: PyTorch's defaults, which the
    harness leaves, allow it in cuDNN's convolutions only (the shipped GPU Relations Game runs trained so)."""
    import torch

    from harness.provenance import machine_info

    assert "gpu_tf32" not in machine_info()  # the CPU: nothing to say
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "NVIDIA H200")
    info = machine_info()
    assert (info["gpu"], info["gpu_tf32"]) == ("NVIDIA H200", "convolutions TF32, matrix products float32")
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    assert machine_info()["gpu_tf32"] == "convolutions float32, matrix products float32"
