"""A run's code record hashes alike on every Python: the digest of a source file must not move with
:func:`ast.dump`'s layout, which changed in 3.12 (``type_params``) and 3.13 (empty fields left out)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from harness.provenance import canonical_dump, source_digest

ROOT = Path(__file__).resolve().parents[1]

SOURCE = '''\
from .x import y as z


class A(B, metaclass=M):
    """doc"""

    def f(self, a: int = 2, *, b=None, **kw) -> None:
        g(**kw)
        return {**kw, "k": a[:b]}


def h(v):
    try:
        match v:
            case None:
                pass
            case [x, *_]:
                return f"{x!r:>3}"
    except ValueError:
        return lambda: None
'''

# The text Python 3.11's ast.dump(tree, annotate_fields=False, include_attributes=False) gives for SOURCE less
# its docstring: the layout every shipped run's code record was hashed in.
DUMP_311 = (
    "Module([ImportFrom('x', [alias('y', 'z')], 1), ClassDef('A', [Name('B', Load())], [keyword('metaclass', "
    "Name('M', Load()))], [FunctionDef('f', arguments([], [arg('self'), arg('a', Name('int', Load()))], kwonl"
    "yargs=[arg('b')], kw_defaults=[Constant(None)], kwarg=arg('kw'), defaults=[Constant(2)]), [Expr(Call(Nam"
    "e('g', Load()), [], [keyword(value=Name('kw', Load()))])), Return(Dict([None, Constant('k')], [Name('kw'"
    ", Load()), Subscript(Name('a', Load()), Slice(upper=Name('b', Load())), Load())]))], [], Constant(None))"
    "], []), FunctionDef('h', arguments([], [arg('v')], kwonlyargs=[], kw_defaults=[], defaults=[]), [Try([Ma"
    "tch(Name('v', Load()), [match_case(MatchSingleton(None), body=[Pass()]), match_case(MatchSequence([Match"
    "As(name='x'), MatchStar()]), body=[Return(JoinedStr([FormattedValue(Name('x', Load()), 114, JoinedStr([C"
    "onstant('>3')]))]))])])], [ExceptHandler(Name('ValueError', Load()), body=[Return(Lambda(arguments([], ["
    '], kwonlyargs=[], kw_defaults=[], defaults=[]), Constant(None)))])], [], [])], [])], [])'
)


def test_canonical_dump_is_python_3_11s_layout_on_any_python():
    tree = ast.parse(SOURCE)
    tree.body[1].body = tree.body[1].body[1:]  # the class's docstring, as source_digest strips it
    assert canonical_dump(tree) == DUMP_311


def test_a_newer_pythons_empty_type_params_do_not_count(monkeypatch):
    tree = ast.parse("def f(x):\n    return x\n")
    plain = canonical_dump(tree)
    # a 3.12 tree: every def carries the field type_params, empty unless the def declares type parameters
    monkeypatch.setattr(ast.FunctionDef, "_fields", (*ast.FunctionDef._fields, "type_params"))
    node = tree.body[0]
    node.type_params = []
    assert canonical_dump(tree) == plain
    node.type_params = [ast.Name("T", ast.Load())]  # a declared type parameter is code
    assert canonical_dump(tree) != plain


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the digests were first recorded with 3.11's ast.dump")
def test_project_digests_equal_the_ones_ast_dump_gave_on_3_11():
    for path in sorted(ROOT.glob("[hmt]*/**/*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert canonical_dump(tree) == ast.dump(tree, annotate_fields=False, include_attributes=False), path


def test_docstrings_and_comments_do_not_count(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text('def f(x):\n    """Doc."""\n    return x + 1\n')
    b.write_text("def f(x):  # a comment\n    return x + 1\n")
    assert source_digest(a) == source_digest(b)
    b.write_text("def f(x):\n    return x + 2\n")
    assert source_digest(a) != source_digest(b)


def test_a_digest_follows_every_edit_of_a_file(tmp_path):
    """Digests are remembered by the file's text, not its path: an edit is seen at once, and going back gives the
    first digest again."""
    path = tmp_path / "model.py"
    path.write_text("def f(x):\n    return x + 1\n")
    first = source_digest(path)
    path.write_text("def f(x):\n    return x + 2\n")
    assert source_digest(path) != first
    path.write_text("def f(x):\n    return x + 1\n")
    assert source_digest(path) == first


def test_the_machine_record_tells_processors_of_one_name_apart(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """A virtual machine may name several generations of a processor alike ("AMD EPYC"), whose arithmetic rounds
    differently: the record adds the processor's family, model and stepping, and the vector kernels torch runs."""
    import torch  # the record reads torch's kernels only where torch is imported

    from harness import provenance

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n"
                       "model name\t: AMD EPYC\nstepping\t: 1\n\nprocessor\t: 1\nvendor_id\t: Other\n")
    real_path = provenance.Path
    monkeypatch.setattr(provenance, "Path", lambda name: cpuinfo if name == "/proc/cpuinfo" else real_path(name))
    info = provenance.machine_info()
    assert info["processor"] == "AMD EPYC" and info["cpu_id"] == "AuthenticAMD family 25 model 1 stepping 1"
    assert info["cpu_capability"] == torch.backends.cpu.get_cpu_capability()  # e.g. AVX2
