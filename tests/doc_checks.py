"""Checks that keep the project's documents true to the code, shared by the tests of each document: the commands
of their shell code blocks (and of inline code spans) parse with the command line's own parser and name known
tasks, models, profiles, sweep files, reference runs, Makefile targets and variables and project modules (nothing
trains, nothing starts Ray), and the repository paths, links, source files and options they name exist."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from harness.cli import build_parser, main
from harness.config import PROFILES, compose
from harness.errors import UserError
from harness.fetch_catalogue import CATALOGUE
from harness.registry import REGISTRY
from tests.conftest import ROOT

FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.S | re.M)  # fenced blocks, indented under list items too
SHELL = ("bash", "sh", "")  # a fence without a language is read for commands too (only lines that start with one)
INLINE = re.compile(r"(?<!`)`([^`]+)`(?!`)")
PLACEHOLDER = re.compile(r"<([A-Za-z_]+)>")  # `<run_id>`: a value the reader fills in
OPTIONAL = re.compile(r"(?<![\w=\['\"])\[([^\]\['\"]+)\](?![\w\]])")  # `[--record]`: an option the reader may add
ELLIPSIS = re.compile(r"\.\.\.|…")
METAVAR = re.compile(r"^[A-Z][A-Z0-9_]*$")  # `--minutes M`, `--out DIR`: an option's value the reader fills in
SHELL_ENDS = {">", ">>", "|", "&&", "||", ";", "2>", "&"}
ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")
COMMAND_START = re.compile(r"^\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:harness|\.venv/bin/harness|make|unshare|python|"
                           r"\.venv/bin/python)(?:\s|$)")
METAVAR_VALUE = "0"  # what an option's metavar is read as: a value every option's type takes
HARNESS = {"harness", ".venv/bin/harness"}
PYTHON = {"python", ".venv/bin/python"}
REPO_PATH = re.compile(r"(?<![\w./$-])((?:docs|sweeps|tasks|models|harness|reports|results|tests)/[\w./-]*[\w/])")
REPO_PATTERN = re.compile(r"(?<![\w./$<{*-])((?:\.ci|bench|docs|sweeps|tasks|models|harness|reports|results|tests)/"
                          r"[\w./*<>{},-]*[\w/*>}])")
SOURCE_FILE = re.compile(r"^[\w./*-]+\.py$")
PROJECT_FOLDERS = ("harness", "tasks", "models", "reports", "tests")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")  # a markdown link's target, relative to its document
SWEEP_FILE = re.compile(r"(?<![\w./-])(sweeps/[\w.*<>-]+\.yaml)")
RUN_ID_FORM = r"[a-z_]+-[a-z0-9_]+-(?:smoke|cpu|paper)-s\d+-[0-9a-f]{8}"  # task-model-profile-sSEED-digest
RUN_ID = re.compile(rf"^{RUN_ID_FORM}$")
RUN_ID_IN_TEXT = re.compile(rf"(?<![\w/-])({RUN_ID_FORM})(?![\w-])")
NAMED = {"bench": ("task", "model", "profile"), "validate": ("task", "model", "profile"), "sweep": ("profile",),
         "runs": ("task", "model")}  # the options of each subcommand that name a task, model or profile
RUN_ARGS = {"retest": "run", "predict": "run", "reproduce": "run", "publish": "runs", "carry": "evidence"}


@dataclass(frozen=True)
class Command:
    """One command a document gives: its text as written, its program (``harness``, ``make`` or ``python``) and
    the words after the program; ``inline`` for one in a code span of the prose, which may name part of a command
    (``harness bench``) rather than a whole one."""

    text: str
    program: str
    argv: tuple[str, ...]
    inline: bool = False


def blocks(text: str, *languages: str) -> list[str]:
    """The bodies of the fenced code blocks in these languages ("" for a fence without one), dedented."""
    found = []
    for indent, language, body in FENCE.findall(text):
        if language in languages:
            found.append("".join(line[len(indent):] if line.startswith(indent) else line
                                 for line in body.splitlines(keepends=True)))
    return found


def prose(text: str) -> str:
    """The text outside fenced code blocks."""
    return FENCE.sub("", text)


def code_spans(text: str) -> list[str]:
    """The inline code spans of the prose, each on one line (a span may wrap in the source)."""
    return [" ".join(span.split()) for span in INLINE.findall(prose(text))]


def command_words(line: str) -> list[str] | None:
    """The words of a shell line as the shell splits them (``#`` comments dropped), a placeholder such as
    ``<run_id>`` read as a word (``run_id``), an optional part such as ``[--record]`` as its words and an option's
    value written as its metavar (``--minutes M``) as ``0``, so the rest of the line is still checked;
    ``unshare -n sh -c '...'`` is read for the command it wraps, and leading ``NAME=value`` assignments are
    dropped. None for a line that is no command of the project's."""
    if not COMMAND_START.match(line):
        return None
    words = shlex.split(OPTIONAL.sub(r"\1", PLACEHOLDER.sub(r"\1", line)), comments=True)
    while words[:1] == ["unshare"] and "-c" in words:  # the loopback-only namespace: its inner command
        inner = words[words.index("-c") + 1]
        words = shlex.split(inner.split("&& exec ", 1)[-1], comments=True)
    while words and ASSIGNMENT.match(words[0]):
        words = words[1:]
    words = [METAVAR_VALUE if METAVAR.match(word) and i and words[i - 1].startswith("--") else word
             for i, word in enumerate(words)]
    end = next((i for i, word in enumerate(words) if word in SHELL_ENDS), len(words))
    return words[:end]


def as_command(text: str, words: list[str] | None, inline: bool) -> Command | None:
    """The command these words make, or None for words that are no harness, make or ``python -m`` command."""
    if not words:
        return None
    if words[0] in HARNESS:
        return Command(text, "harness", tuple(words[1:]), inline)
    if words[0] == "make":
        return Command(text, "make", tuple(words[1:]), inline)
    if words[0] in PYTHON and words[1:2] == ["-m"]:
        return Command(text, "python", tuple(words[2:]), inline)
    return None


def block_commands(text: str) -> list[Command]:
    """Every command of the shell code blocks, a line continued with a backslash read whole."""
    found = []
    for body in blocks(text, *SHELL):
        for line in body.replace("\\\n", " ").splitlines():
            command = as_command(line, command_words(line), inline=False)
            if command is not None:
                found.append(command)
    return found


def harness_commands(text: str) -> list[tuple[str, list[str]]]:
    """(the line, the words after ``harness``) of every harness command in the shell code blocks."""
    return [(command.text, list(command.argv)) for command in block_commands(text) if command.program == "harness"]


def inline_commands(text: str) -> tuple[list[Command], dict[str, str]]:
    """The commands of the prose's code spans, and the spans left unchecked with the reason why: one with an
    ellipsis stands for words the reader fills in (``SWEEP=...``), so no parse of it can be right or wrong, and one
    with a quote it does not close is part of a command line."""
    found, skipped = [], {}
    for span in code_spans(text):
        try:
            command = as_command(span, command_words(span), inline=True)
        except ValueError:  # an unbalanced quote: a span quoting part of a command line
            skipped[span] = "a quote it does not close"
            continue
        if command is None:
            continue
        if ELLIPSIS.search(span):
            skipped[span] = "an ellipsis stands for words the reader fills in"
            continue
        found.append(command)
    return found, skipped


def makefile_targets(makefile: Path = ROOT / "Makefile") -> set[str]:
    """The Makefile's targets (its rule lines, variables such as ``$(STAMP)`` left out)."""
    targets = set()
    for line in makefile.read_text().splitlines():
        rule = re.match(r"^([\w.-][\w. -]*?)\s*:(?![=:])", line)
        if rule and not line.startswith("\t"):
            targets.update(name for name in rule.group(1).split() if not name.startswith("."))
    return targets


def makefile_variables(makefile: Path = ROOT / "Makefile") -> set[str]:
    """The variables the Makefile reads (``$(NAME)``, ``$(origin NAME)``) or sets (``NAME ?=``)."""
    text = makefile.read_text()
    return (set(re.findall(r"\$\((?:origin )?([A-Z_][A-Z0-9_]*)\)", text))
            | set(re.findall(r"^([A-Z_][A-Z0-9_]*)\s*[?:]?=", text, re.M)))


@cache
def doc_parser(lenient: bool) -> argparse.ArgumentParser:
    """The command line's parser, taking no abbreviation of an option (a document spells each in full: argparse
    would read ``--stal`` as ``--stale``); ``lenient``: with nothing required, for an inline span that names part of
    a command (``harness bench``, ``harness retest``), in which a misspelt subcommand or option is still refused."""
    parser = build_parser()
    stack = [parser]
    while stack:
        current = stack.pop()
        current.allow_abbrev = False
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())
            elif lenient:
                action.required = False
                if not action.option_strings and action.nargs in (None, "+"):
                    action.nargs = "?" if action.nargs is None else "*"
            if lenient and isinstance(action, argparse._SubParsersAction):
                action.required = False
    return parser


def parse(argv: list[str], lenient: bool = False) -> tuple[argparse.Namespace | None, str]:
    """The parsed arguments, or None and the parser's complaint."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            return doc_parser(lenient).parse_args(argv), ""
    except SystemExit:
        return None, stderr.getvalue().strip()


def harness_problems(command: Command, examples: frozenset[str] = frozenset()) -> list[str]:
    """What is wrong with one harness command: a line the parser refuses (a misspelt command or option), a task,
    model or profile that does not exist (but for the ``examples`` a document adds itself), a config its overrides
    cannot compose, a sweep its dry run refuses, a dataset ``harness data fetch`` does not know, or a reference run
    id that is not in results/."""
    args, complaint = parse(list(command.argv), lenient=command.inline)
    if args is None and command.inline and command.argv[-1:] and command.argv[-1].startswith("--"):
        args, _ = parse([*command.argv, METAVAR_VALUE], lenient=True)  # the span names an option, not its value
    if args is None:
        return [f"{command.text}: {complaint}"]
    problems = named_problems(command, args, examples) + run_id_problems(command, args)
    if problems:
        return problems
    if args.command in ("bench", "validate") and args.task and args.model and not {args.task, args.model} & examples:
        return compose_problems(command, args.task, args.model, args.profile, args.overrides)
    if args.command == "sweep" and args.file:
        return dry_run_problems(command, list(command.argv), examples)
    return []


def named_problems(command: Command, args: argparse.Namespace, examples: frozenset[str]) -> list[str]:
    """The tasks, models, profiles, sweep files and datasets a harness command names that do not exist."""
    problems = []
    for name in NAMED.get(args.command, ()):
        known = {"task": REGISTRY.tasks, "model": REGISTRY.models, "profile": PROFILES}[name]
        value = getattr(args, name, None)
        if value is not None and value not in known and value not in examples:
            problems.append(f"{command.text}: unknown {name} {value!r}")
    if args.command == "sweep" and args.file and not (ROOT / args.file).is_file():
        problems.append(f"{command.text}: no sweep file {args.file}")
    if args.command == "data" and args.task == "fetch" and args.name and not METAVAR.match(args.name) \
            and args.name not in CATALOGUE:
        problems.append(f"{command.text}: no dataset {args.name!r} to fetch")
    return problems


def run_id_problems(command: Command, args: argparse.Namespace) -> list[str]:
    """The run ids a harness command names (``retest``, ``reproduce``, ``carry --evidence``, ...) that are not
    reference runs; a placeholder (``run_id``, ``RUN``) is no run id."""
    runs = getattr(args, RUN_ARGS.get(args.command, ""), None) or []
    return [f"{command.text}: no reference run {run}" for run in ([runs] if isinstance(runs, str) else runs)
            if RUN_ID.match(run) and run not in reference_runs()]


def make_problems(command: Command, examples: frozenset[str] = frozenset()) -> list[str]:
    """What is wrong with one make command: a target the Makefile lacks, a variable it never reads, a TASK, MODEL
    or PROFILE that does not exist, a SWEEP file that does not exist, a config ``make bench`` or ``make validate``
    cannot compose, or a sweep the dry run of ``make sweep``'s command refuses."""
    targets, variables, problems = makefile_targets(), makefile_variables(), []
    for word in command.argv:
        name, assigned, value = word.partition("=")
        known = {"TASK": REGISTRY.tasks, "MODEL": REGISTRY.models, "PROFILE": PROFILES}.get(name)
        if not assigned and word not in targets:
            problems.append(f"{command.text}: no make target {word!r}")
        elif assigned and name not in variables:
            problems.append(f"{command.text}: the Makefile reads no variable {name}")
        elif known is not None and value and value not in known and value not in examples:
            problems.append(f"{command.text}: unknown {name} {value!r}")
        elif name == "SWEEP" and not ELLIPSIS.search(value) and not (ROOT / value).is_file():
            problems.append(f"{command.text}: no sweep file {value}")
    if problems:
        return problems
    if command.argv[:1] in (("bench",), ("validate",)):
        return make_compose_problems(command, examples)
    if command.argv[:1] == ("sweep",):
        return dry_run_problems(command, make_sweep_argv(command), examples)
    return []


def make_sweep_argv(command: Command) -> list[str]:
    """The ``harness sweep`` words a ``make sweep`` command runs (the Makefile's sweep recipe)."""
    given = dict(word.partition("=")[::2] for word in command.argv if "=" in word)
    argv = ["sweep", given.get("SWEEP", "")]
    for variable, option in (("PROFILE", "--profile"), ("SEEDS", "--seeds"), ("CELLS", "--cells")):
        if given.get(variable):
            argv += [option, given[variable]]
    for only in given.get("ONLY", "").split():
        argv += ["--only", only]
    return argv


def dry_run_problems(command: Command, argv: list[str], examples: frozenset[str]) -> list[str]:
    """What ``harness sweep ... --dry-run`` refuses in a sweep command: a cell pattern that chooses nothing, an
    ``--only`` outside the grid, a profile or seed list it cannot take (it composes every trial's config; nothing
    starts). A command naming a document's own example task or model (a sweep of cells yet to be added) is left
    out, and so is one with an ellipsis (``SWEEP=...``)."""
    if any(example in word for example in examples for word in argv) or ELLIPSIS.search(" ".join(argv)):
        return []
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(argv if "--dry-run" in argv else [*argv, "--dry-run"])
    return [] if code == 0 else [f"{command.text}: the dry run says: {stderr.getvalue().strip()}"]


def make_compose_problems(command: Command, examples: frozenset[str]) -> list[str]:
    """What is wrong with the config a ``make bench`` or ``make validate`` composes (the Makefile's defaults for
    the variables the command leaves out)."""
    given = dict(word.partition("=")[::2] for word in command.argv if "=" in word)
    task, model = given.get("TASK", "babi"), given.get("MODEL", "tpr_rnn")
    if {task, model} & examples or task not in REGISTRY.tasks or model not in REGISTRY.models:
        return []
    return compose_problems(command, task, model, given.get("PROFILE") or "cpu", shlex.split(given.get("ARGS", "")))


def compose_problems(command: Command, task: str, model: str, profile: str, overrides: list[str]) -> list[str]:
    """What is wrong with the config a command composes: an unknown key, a value of the wrong type or out of
    range. An override whose value is a metavar (``task.babi_id=N``) is left out."""
    given = [item for item in overrides if not METAVAR.match(item.partition("=")[2])]
    try:
        compose(task, model, profile, given)
    except UserError as error:
        return [f"{command.text}: {error}"]
    return []


def module_file(module: str) -> Path | None:
    """The source file of a project module run with ``python -m`` (a package's ``__main__.py``), or None."""
    path = ROOT / module.replace(".", "/")
    return next((file for file in (path.with_suffix(".py"), path / "__main__.py") if file.is_file()), None)


COMMAND_LINE = ("harness.cli", "harness.cli_parser")  # the harness command's own options, not a module's
PROJECT_IMPORT = re.compile(rf"^from ((?:{'|'.join(PROJECT_FOLDERS)})(?:\.\w+)+) import", re.M)


def module_options(module: str) -> set[str]:
    """The options a project module's source spells out (``"--trim"``), or the source of a project module it imports
    (a shared set of options such as :func:`harness.bench_args.add_timing_arguments`): those its parser takes."""
    file = module_file(module)
    if file is None:
        return set()
    text = file.read_text()
    sources = [text, *(imported.read_text() for name in PROJECT_IMPORT.findall(text)  # not the command line's
                       if name not in COMMAND_LINE and (imported := module_file(name)) is not None)]
    return {option for source in sources for option in re.findall(r"[\"'](--[\w-]+)[\"']", source)}


def python_problems(command: Command) -> list[str]:
    """What is wrong with one ``python -m MODULE`` command of the project: a module that does not exist, or an
    option its source does not spell out. Another package's module (``pytest``) is not the project's to check."""
    module = command.argv[0] if command.argv else ""
    if module.split(".")[0] not in PROJECT_FOLDERS:
        return []
    if module_file(module) is None:
        return [f"{command.text}: no module {module}"]
    unknown = [word for word in command.argv[1:] if word.startswith("--")
               and word.split("=")[0] not in module_options(module)]
    return [f"{command.text}: {module} takes no option {word}" for word in unknown]


def harness_options() -> set[str]:
    """Every option of every harness subcommand."""
    options, stack = set(), [doc_parser(False)]
    while stack:
        for action in stack.pop()._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())
            options.update(action.option_strings)
    return options


def unknown_options(text: str) -> list[str]:
    """The options a document names alone in a code span (``--seeds 0,1,2``, ``--trim``) that neither a harness
    subcommand nor a module the document runs with ``python -m`` takes."""
    modules = {command.argv[0] for command in block_commands(text) + inline_commands(text)[0]
               if command.program == "python" and command.argv}
    known = harness_options().union(*(module_options(module) for module in modules))
    return sorted({word.split("=")[0] for span in code_spans(text) if span.startswith("--")
                   for word in span.split() if word.startswith("--") and word.split("=")[0] not in known})


def command_problems(text: str, examples: frozenset[str] = frozenset(), inline: bool = False) -> list[str]:
    """What is wrong with a document's commands (those of its shell code blocks; with ``inline``, those of its
    code spans too)."""
    commands = block_commands(text) + (inline_commands(text)[0] if inline else [])
    problems = []
    for command in commands:
        if command.program == "harness":
            problems += harness_problems(command, examples)
        elif command.program == "make":
            problems += make_problems(command, examples)
        else:
            problems += python_problems(command)
    return problems


@cache
def reference_runs() -> frozenset[str]:
    """The run ids of the reference store (results/<task>/<model>/<run_id>)."""
    return frozenset(path.name for path in (ROOT / "results").glob("*/*/*") if path.is_dir())


def unknown_run_ids(text: str) -> list[str]:
    """The run ids a document names anywhere that are not reference runs in results/."""
    return sorted({run for run in RUN_ID_IN_TEXT.findall(text) if run not in reference_runs()})


def layout_paths(text: str) -> list[str]:
    """The paths of a document's layout block (a fence without a language whose first line names ``harness/``):
    each line's entries before the description (two spaces or more), a line indented by two spaces naming
    files of the folder above it (``harness/``: ``defaults.yaml, ..., profiles/{smoke,cpu,paper}.yaml``)."""
    paths = []
    for body in blocks(text, ""):
        if not body.startswith("harness/"):
            continue
        folder = ""
        for line in body.splitlines():
            if not line.strip() or line.startswith("   "):  # a description continued
                continue
            names = re.split(r"\s{2,}", line.strip())[0]
            entries = [name.strip() for name in re.split(r",\s*(?![^{]*\})", names) if name.strip()]
            if line.startswith("  "):
                paths += [folder + entry for entry in entries]
            else:
                paths += entries
                folder = entries[-1] if entries[-1].endswith("/") else folder
    return paths


def unknown_source_files(text: str, doc: Path) -> list[str]:
    """The ``.py`` files a document names by a short name in a code span (``rl_select.py``, ``pairs/x.py``) that
    no project folder holds: looked for beside the document, at the top and anywhere in the project's folders."""
    unknown = set()
    for span in code_spans(text):
        if SOURCE_FILE.match(span) and not REPO_PATTERN.fullmatch(span) and not (
                pattern_matches(span, doc.parent) or pattern_matches(span) or anywhere(span)):
            unknown.add(span)
    return sorted(unknown)


def anywhere(name: str) -> bool:
    """Whether a file of this name (or path tail) lies in one of the project's folders."""
    return any(next((ROOT / folder).rglob(name), None) for folder in PROJECT_FOLDERS)


def named_paths(text: str) -> set[str]:
    """Every repository path a document names (``docs/...``, ``tasks/...``, ...; no patterns)."""
    return set(REPO_PATH.findall(text))


def pattern_matches(pattern: str, base: Path = ROOT) -> list[Path]:
    """The files a named path matches: ``<task>`` and ``*`` stand for any name, ``{a,b}`` for each of its
    choices (none where one of them matches nothing)."""
    choices = re.match(r"(.*?)\{([^{}]*)\}(.*)", pattern)
    if choices:
        head, options, tail = choices.groups()
        each = [pattern_matches(head + option + tail, base) for option in options.split(",")]
        return [path for paths in each for path in paths] if all(each) else []
    glob = PLACEHOLDER.sub("*", pattern).rstrip("/")
    if "*" not in glob:
        return [base / glob] if (base / glob).exists() else []
    return list(base.glob(glob))


def missing_paths(text: str, doc: Path, generated: tuple[str, ...] = ()) -> list[str]:
    """The repository paths (patterns included) and relative markdown links of a document that match nothing,
    but for those under ``generated`` (outputs git ignores)."""
    missing = {path for path in REPO_PATTERN.findall(text)
               if not path.startswith(generated) and not pattern_matches(path)}
    for target in LINK.findall(text):
        if "://" not in target and not target.startswith("mailto:") and not (doc.parent / target).exists():
            missing.add(target)
    return sorted(missing)
