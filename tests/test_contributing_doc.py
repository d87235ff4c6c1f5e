"""docs/contributing.md stays true to the code: its example model and task files register and compose at every
profile as written, and every repository path it names exists. Seconds."""

from __future__ import annotations

import re
import shutil
import textwrap

from harness.config import PROFILES, compose
from harness.registry import Registry
from tests.conftest import ROOT
from tests.doc_checks import missing_paths, named_paths

GUIDE = ROOT / "docs" / "contributing.md"
YAML_BLOCK = re.compile(r"^( *)```yaml\n(.*?)^\1```", re.S | re.M)  # fenced blocks, indented under list items too


def test_the_example_model_and_task_files_register_and_compose_as_written(tmp_path):
    model_text, task_text = (textwrap.dedent(body) for _, body in YAML_BLOCK.findall(GUIDE.read_text()))
    assert "name: gru" in model_text and "name: parity" in task_text
    (tmp_path / "models" / "gru").mkdir(parents=True)
    (tmp_path / "tasks" / "parity").mkdir(parents=True)
    shutil.copy(ROOT / "models" / "adapters.yaml", tmp_path / "models" / "adapters.yaml")
    (tmp_path / "models" / "gru" / "gru.yaml").write_text(model_text)
    (tmp_path / "tasks" / "parity" / "task.yaml").write_text(task_text)
    registry = Registry(tmp_path)
    compat = registry.compatibility(registry.task("parity"), registry.model("gru"))
    assert compat.ok and compat.route == "tokens -> gru -> classifier"
    for profile in PROFILES:
        cfg = compose("parity", "gru", profile, registry=registry).cfg
        assert cfg.model.hidden_size == (128 if profile == "cpu" else 64) and cfg.task.max_length == 8


def test_every_repository_path_the_guide_names_exists():
    text = GUIDE.read_text()
    assert {"models/adapters.yaml", "harness/interfaces.py", "tests/test_adapters.py"} <= named_paths(text)
    assert missing_paths(text, GUIDE) == []
