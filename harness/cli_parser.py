"""The command line's parser: every ``harness`` subcommand with its options and its command function, and the
harness's way of reporting a mistake on a command line (:class:`HarnessParser`: one line, exit code 2).

The command functions are imported when the parser is built (:func:`build_parser`), since :mod:`harness.cli`,
which holds most of them, imports this module.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, NoReturn

from harness.errors import did_you_mean
from harness.fetch_catalogue import CATALOGUE


class HarnessParser(argparse.ArgumentParser):
    """argparse with the harness's way of reporting a mistake: one line, exit code 2 (subcommands inherit it;
    the benchmarks' own command lines use it too)."""

    def error(self, message: str) -> NoReturn:
        choice = re.fullmatch(r"argument (.+?): invalid choice: '(.*)' \(choose from (.*)\)", message)
        if choice:  # a misspelt subcommand: with a did-you-mean
            what, given, offered = choice.groups()
            names = re.findall(r"'([^']*)'", offered) or [name.strip() for name in offered.split(",")]
            command = what == "command" or what.startswith("{")  # a subcommand's name
            message = (f"{'' if command else f'argument {what}: '}invalid choice: '{given}'"
                       f"{did_you_mean(given, names)}; {'commands' if command else 'choose from'}: {', '.join(names)}")
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")

    def parse_args(self, args: Any = None, namespace: Any = None) -> argparse.Namespace:  # type: ignore[override]
        """As argparse's, but words no parser took are reported by the subcommand that was given them (its
        ``--help`` is the one to read), naming the other subcommand that has such an option, if one does."""
        args = self._glue_dash_values(list(sys.argv[1:] if args is None else args))
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            chosen = self._chosen(parsed)
            message = f"unrecognized arguments: {' '.join(extras)}"
            for word in (w.split("=", 1)[0] for w in extras if w.startswith("--")):
                others = [p.prog.removeprefix(f"{self.prog} ") for p in self._parsers()
                          if p is not chosen and word in p._option_string_actions]
                if others and word not in chosen._option_string_actions:
                    message += (f"; {word} is not an option of {chosen.prog.removeprefix(f'{self.prog} ')} "
                                f"({', '.join(others)} {'has' if len(others) == 1 else 'have'} it)")
                    break
            else:
                message += _override_hint(parsed, extras, args)
            chosen.error(message)
        return parsed

    def _glue_dash_values(self, args: list[str]) -> list[str]:
        """``--seeds -1,2`` as ``--seeds=-1,2``: argparse takes a word that starts with a dash and is not one plain
        number for an option, and would only say that the flag "expected one argument"; glued to a flag that takes
        one value, a word starting with a dash and a digit (no option of ours) reaches the flag's own check, which
        says what is wrong with it. Words after ``--`` are left as they are."""
        takes_value = {option for parser in self._parsers() for action in parser._actions if action.nargs is None
                       for option in action.option_strings if option.startswith("--")}
        glued: list[str] = []
        for i, word in enumerate(args):
            if word == "--":
                return [*glued, *args[i:]]
            if glued and glued[-1] in takes_value and re.match(r"-\d", word):
                glued[-1] = f"{glued[-1]}={word}"
            else:
                glued.append(word)
        return glued

    def _subcommands(self) -> tuple[str, dict[str, argparse.ArgumentParser]]:
        """(the attribute that names the chosen subcommand, the subcommands' parsers by name); ("", {}) for none."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return action.dest, dict(action.choices)
        return "", {}

    def _chosen(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The innermost parser that the command line chose (``harness data babi``: that subcommand's)."""
        dest, choices = self._subcommands()
        chosen = choices.get(str(getattr(parsed, dest, ""))) if dest else None
        return chosen._chosen(parsed) if isinstance(chosen, HarnessParser) else self

    def _parsers(self) -> list[argparse.ArgumentParser]:
        """This parser and every subcommand's, depth first."""
        nested = self._subcommands()[1].values()
        return [self, *(q for p in nested for q in (p._parsers() if isinstance(p, HarnessParser) else [p]))]


def _override_hint(parsed: argparse.Namespace, extras: list[str], words: list[str]) -> str:
    """For ``bench --babi_id 2`` and the like: an option no subcommand has, which names a config key of the run
    (``task.babi_id``), is meant as an override: "; config settings are overrides: task.babi_id=2". Only where
    the command composes a config (``--task`` and ``--model`` given) and the name fits one key; else ''.
    ``words``: the whole command line, whose word after the option is its value (argparse took it as an
    override)."""
    option = next((word for word in extras if word.startswith("--") and len(word) > 2), None)
    task, model = getattr(parsed, "task", None), getattr(parsed, "model", None)
    if option is None or not isinstance(task, str) or not isinstance(model, str):
        return ""
    name, given, value = option[2:].partition("=")
    following = words[words.index(option) + 1:] if option in words else []
    if not given and following and not following[0].startswith("-") and "=" not in following[0]:
        value = following[0]
    try:
        from omegaconf import OmegaConf

        from harness.config import compose
        from harness.schema import leaves

        composed = compose(task, model, str(getattr(parsed, "profile", None) or "cpu"))
        keys = [key for key, _ in leaves(OmegaConf.to_container(composed.cfg))]
    except Exception:  # noqa: BLE001  a hint only: a command line that does not compose gets none
        return ""
    fits = [key for key in keys if key.rpartition(".")[2] == name.replace("-", "_")]
    if len(fits) != 1:
        return ""
    return f"; config settings are overrides after the options, KEY=VALUE: {fits[0]}={value or '...'}"


RUNS_DIR_HELP = "the run store (default: $HARNESS_RUNS_DIR or ./runs)"


def _folder(text: str) -> str:
    """A folder option's value: an empty one (``--runs-dir ""``, a shell variable left unset) is a mistake, not the
    default, which leaving the option out gives."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; leave the option out for the default")
    return text


def _sentence(text: str, more: str = "") -> str:
    """A subcommand's one-line help (``more`` added) as its ``--help`` description: a capitalised sentence."""
    return f"{text[0].upper()}{text[1:]}{more}."


def build_parser() -> argparse.ArgumentParser:
    from harness import cli  # imports this module: its commands are taken when the parser is built
    from harness.cli import (
        cmd_bench,
        cmd_carry,
        cmd_data,
        cmd_list,
        cmd_predict,
        cmd_publish,
        cmd_report,
        cmd_reproduce,
        cmd_retest,
        cmd_sweep,
        cmd_validate,
    )
    from harness.cli_runs import cmd_runs

    parser = HarnessParser(prog="harness", description=cli.__doc__.split("\n\n")[0].replace("\n", " ").replace("``", "")
                           + " `harness COMMAND --help` says what each takes.")
    sub = parser.add_subparsers(dest="command", required=True)
    text = "tasks, models and the task x model matrix"
    sub.add_parser("list", help=text, description=_sentence(text)).set_defaults(func=cmd_list)
    for name, func, text in (("bench", cmd_bench, "train and test one (task, model) pair"),
                             ("validate", cmd_validate, "print the resolved config of a run without training it "
                                                        "(its data is loaded and its model built, as bench does)")):
        p = sub.add_parser(name, help=text, description=_sentence(text))
        p.add_argument("--task", required=True, help="the task (`harness list` names them)")
        p.add_argument("--model", required=True, help="the model (`harness list` names them)")
        p.add_argument("--profile", default="cpu", help="the settings' scale: smoke | cpu (default) | paper")
        p.add_argument("--seed", type=int, default=None, help="the run's seed, an integer >= 0 (default: 0)")
        if name == "bench":
            p.add_argument("--seeds", default=None, metavar="0,1,2",
                           help="one run per seed (integers >= 0), trained as one stack (supervised runs)")
            p.add_argument("--force", action="store_true",
                           help="retrain even if the run completed (make bench: FORCE=1)")
        p.add_argument("--runs-dir", type=_folder, default=None, help=RUNS_DIR_HELP if name == "bench" else
                       "taken so that a bench command line validates as it is; validate writes no run")
        p.add_argument("overrides", nargs="*", help="config overrides, e.g. optim.lr=3e-4 task.babi_id=2")
        p.set_defaults(func=func)
    text = "run a sweep file (sweeps/<name>.yaml) on Ray Tune"
    p = sub.add_parser("sweep", help=text, description=_sentence(text))
    p.add_argument("file", help="the sweep file, e.g. sweeps/babi_smoke.yaml")
    p.add_argument("--runs-dir", type=_folder, default=None, help=RUNS_DIR_HELP)
    p.add_argument("--dry-run", action="store_true", help="check the sweep and count its trials; start nothing")
    p.add_argument("--profile", default=None, help="run at this profile (default: the file's)")
    p.add_argument("--seeds", action="append", default=None, metavar="0,1,2",
                   help="run these seeds (integers >= 0) instead of the file's; the trials of a seed the file "
                        "has keep their run ids, so a sweep run before trains only the new seeds; repeated, the "
                        "seeds add up (default: the file's seeds)")
    p.add_argument("--cells", action="append", default=None, metavar="PATTERNS",
                   help="only these cells, as task/model patterns, e.g. 'babi/*,relations_game/lstm' (a sweep of "
                        "one task: its models, e.g. 'relations_game/predinet' or 'predinet,mlp*'); repeated, the "
                        "patterns add up; default: all")
    p.add_argument("--only", action="append", default=None, metavar="KEY=VALUES",
                   help="only these values of one grid key, e.g. task.babi_id=1,8 or "
                        "'model.operations=[write],[write,move]'; repeat it to add values of that key or narrow "
                        "another; the trials keep their run ids (default: the whole grid)")
    p.set_defaults(func=cmd_sweep)
    text = "build the HTML report (reports/out/): your runs beside the reference runs"
    p = sub.add_parser("report", help=text, description=_sentence(text))
    p.add_argument("--runs-dir", type=_folder, default=None, help=RUNS_DIR_HELP)
    p.add_argument("--results-dir", default=None,
                   help="the reference store, an existing folder (default: results/; '' for none)")
    p.add_argument("--out", type=_folder, default="reports/out",
                   help="the site's folder: absent, empty or an earlier build's, which it replaces whole "
                        "(default: reports/out)")
    p.add_argument("--jobs", type=int, default=None,
                   help="processes that draw the run pages (default: the CPUs available)")
    p.add_argument("--no-figure-cache", action="store_true",
                   help="draw every figure again (the run pages' and the paper pages'), neither reading nor "
                        "keeping them in $HARNESS_CACHE_DIR/report-figures (default: a figure whose run, or whose "
                        "data, is unchanged since the last build is not drawn again)")
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("runs", help="the runs in the store, with their status and test accuracies")
    p.add_argument("--task", default=None, help="only this task's runs (default: all)")
    p.add_argument("--model", default=None, help="only this model's runs (default: all)")
    p.add_argument("--runs-dir", type=_folder, default=None, help="default: $HARNESS_RUNS_DIR or ./runs")
    p.add_argument("--reference", action="store_true", help="list the shipped reference runs (results/) instead")
    p.add_argument("--stale", action="store_true",
                   help="only the stale runs, with the files that changed and the command that reruns each")
    p.add_argument("--imports", nargs="+", metavar="FILE", default=None,
                   help="only the runs that imported these source files: the runs a change to them would make stale")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table",
                   help="table (default), or json or csv: one record per run on stdout (setting, status, progress, "
                        "held-out metrics) for pandas, R or a spreadsheet, e.g. harness runs --format csv > runs.csv")
    p.set_defaults(func=cmd_runs)
    text = "copy completed runs into the tracked reference store (results/)"
    p = sub.add_parser("publish", help=text,
                       description=_sentence(text, "; the members of a stack (bench --seeds) go together"))
    p.add_argument("runs", nargs="+", help="run ids (from `harness runs`) or run directories")
    p.add_argument("--runs-dir", type=_folder, default=None, help=RUNS_DIR_HELP)
    p.add_argument("--to", default=None, help="the reference store (default: results/ in the repository)")
    p.set_defaults(func=cmd_publish)
    text = "test a completed supervised run on other data (task.test_* settings) without retraining"
    p = sub.add_parser("retest", help=text,
                       description=_sentence(text, "; a new split is scored as the run's own test pass scored its"
                                                   " splits"))
    p.add_argument("run", help="a run id (from `harness runs`) or a run directory")
    p.add_argument("overrides", nargs="+", help="task settings naming the new test data, e.g. task.test_on=[files]")
    p.add_argument("--runs-dir", type=_folder, default=None, help=RUNS_DIR_HELP)
    p.set_defaults(func=cmd_retest)
    text = "write a completed supervised run's per-example test predictions (from its checkpoint)"
    p = sub.add_parser("predict", help=text, description=_sentence(
        text, " into <run>/predictions/; exit code 1 when the accuracy recomputed from them differs from the one the"
              " run reported"))
    p.add_argument("run", help="a run id (from `harness runs`) or a run directory")
    p.add_argument("--runs-dir", type=_folder, default=None, help=RUNS_DIR_HELP)
    p.set_defaults(func=cmd_predict)
    text = "train a stored supervised or stepwise run again and compare every figure it reported"
    p = sub.add_parser("reproduce", help=text, description=_sentence(
        text, ": a run ended by its own rule by the same config without its cap, one the time cap stopped for the "
              "epochs up to its tested checkpoint, or the steps up to it where it came part way through an epoch (a "
              "stepwise run: the outer cycles it trained) without the cap, a budget independent of the machine's "
              "speed. On the same kind of CPU every figure comes back bit for bit. "
              "Exit code 0 when every figure is equal, 1 when one differs"))
    p.add_argument("run", nargs="?", default=None,
                   help="a run id (from `harness runs --reference` or `harness runs`) or a run directory")
    p.add_argument("--runs-dir", type=_folder, default=None, help=RUNS_DIR_HELP + " (where the run is trained again)")
    p.add_argument("--results-dir", default=None,
                   help="the reference store searched first (default: results/; '' for none)")
    p.add_argument("--record", action="store_true",
                   help="add the check to the reference store's reproductions.json (the README's Reproduced table)")
    p.add_argument("--unchecked", action="store_true",
                   help="instead of one run: every reference run no check has trained again yet that trained on a CPU "
                        "of this machine's kind, the cheapest first (harness/reproduce_unchecked.py)")
    p.add_argument("--minutes", type=float, default=None,
                   help="with --unchecked: minutes of wall time from the start; a run starts only while its time "
                        "as it trained fits in what is left (with --jobs, runs side by side share that time, so "
                        "their times as trained may add up to more)")
    p.add_argument("--list", action="store_true", help="with --unchecked: print the queue, train nothing")
    p.add_argument("--jobs", type=int, default=1,
                   help="with --unchecked: train this many checks at once, each in its own process (default 1)")
    p.set_defaults(func=cmd_reproduce)
    text = "carry the reference runs over an edit shown to compute nothing differently, so they do not read as stale"
    p = sub.add_parser("carry", help=text, description=_sentence(
        text, ": records each FILE's digest in --base and in the working tree in results/code_changes.json, once "
              "every evidence run (a reference run trained before the edit) has a bit-for-bit check under the "
              "edited files in results/reproductions.json (harness reproduce RUN --record)"))
    p.add_argument("files", nargs="*", metavar="FILE", help="the edited source files (project-relative paths)")
    p.add_argument("--what", default=None, help="what the edit does, shown beside every run it carries")
    p.add_argument("--evidence", nargs="+", default=None, metavar="RUN", help="reference runs reproduced bit for bit")
    p.add_argument("--probe", nargs="+", default=None, metavar="MODULE",
                   help="modules whose probe() fingerprints what the edited code computes (e.g. tasks.boxworld.probe, "
                        "for the envs of RL runs, which cannot be reproduced): run on --base's code and on the "
                        "working tree, their outputs must be equal")
    p.add_argument("--base", default="HEAD", help="the git revision before the edit (default: HEAD)")
    p.add_argument("--check", action="store_true", help="check the evidence of every recorded change (exit 1 if any "
                   "fails)")
    p.set_defaults(func=cmd_carry)
    p = sub.add_parser("data", help="write generated bAbI tasks as files, or download a dataset (data fetch NAME)",
                       description="Write generated bAbI tasks as files (data babi), or download a dataset (data "
                                   "fetch NAME: " + ", ".join(CATALOGUE) + "). The other tasks generate their data "
                                   "when a run starts (ListOps and Pathfinder cache it under $HARNESS_CACHE_DIR); "
                                   "LRA's ListOps and Pathfinder files come with `data fetch lra`.")
    data = p.add_subparsers(dest="task", required=True, metavar="{babi,fetch}")
    p = data.add_parser("babi", help="write generated bAbI tasks in the official file format",
                        description="Write the built-in generator's bAbI tasks into one folder with the official "
                                    "file names (the en-10k layout: qa{N}_<name>_{train,test}.txt).")
    p.add_argument("--generate", action="store_true",
                   help="generate the data (what this command does; spelled out for scripts)")
    p.add_argument("--out", required=True, help="the folder to write into, e.g. $HARNESS_DATA_DIR/babi/en-10k")
    p.add_argument("--ids", type=int, nargs="+", default=list(range(1, 21)), help="tasks (default: all 20)")
    p.add_argument("--seed", type=int, default=0, help="the generator's seed, an integer >= 0 (default: 0)")
    p.add_argument("--n-train", "--n", type=int, default=10000, help="training questions per task (default: 10000)")
    p.add_argument("--n-test", type=int, default=1000, help="test questions per task (default: 1000)")
    p.add_argument("--force", action="store_true",
                   help="replace same-named files already in --out (default: refused)")
    p.set_defaults(func=cmd_data)
    p = data.add_parser("fetch", help="download, check and unpack a dataset into the data folder",
                        description="Download, check and unpack a dataset: "
                                    + "; ".join(f"{d.name} -> {d.folder}/" for d in CATALOGUE.values())
                                    + ". An interrupted download resumes; a second fetch does nothing.")
    p.add_argument("name", help=", ".join(CATALOGUE))
    p.add_argument("--dest", default=None, type=_folder, help="the data folder (default: $HARNESS_DATA_DIR)")
    p.add_argument("--url", default=None, help="download from this address instead (a mirror); for a dataset of "
                                               "several files, the folder address")
    p.add_argument("--sha256", default=None, metavar="HEX", help="the SHA-256 the download must have")
    p.add_argument("--force", action="store_true", help="download and unpack again even if present")
    p.set_defaults(func=cmd_data)
    return parser
