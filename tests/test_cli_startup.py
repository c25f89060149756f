"""``wield --help`` starts fast: the parser is built without torch, numba or any case study's modules.

Each check runs the command in a fresh interpreter and reads ``sys.modules`` afterwards (no timing
assertion: the machine may be loaded). Case studies are loaded only when one is named on the command line
(``wield.cli.studies``).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "numba", "matplotlib", "pandas", "scipy", "stable_baselines3")
# every command whose help once imported torch, pandas or scipy through a case study's options (issue 46: each
# took 2-3 CPU-seconds; benchmarks/cli_startup.py measures them all)
HELP_COMMANDS = (("run",), ("run", "indexing"), ("run", "scheduling"), ("run", "placement"), ("run", "caching"),
                 ("compare",), ("compare", "indexing"), ("progress",), ("demonstrate", "indexing"), ("db",),
                 ("report",), ("tune",), ("tune", "indexing"))


def _loaded_after(*argv: str) -> tuple[set[str], str]:
    """The top-level modules (and every ``case_studies`` / ``wield_examples`` module) imported by
    ``wield ARGV``, and what it printed."""
    script = ("import contextlib, io, json, sys\n"
              "from wield.cli import main\n"
              "out = io.StringIO()\n"
              "with contextlib.redirect_stdout(out):\n"
              "    try:\n"
              f"        main({list(argv)!r})\n"
              "    except SystemExit:\n"
              "        pass\n"
              "names = {m.split('.')[0] for m in sys.modules}\n"
              "names |= {m for m in sys.modules if m.startswith(('case_studies.', 'wield_examples.'))}\n"
              "print(json.dumps({'modules': sorted(names), 'out': out.getvalue()}))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return set(found["modules"]), found["out"]


def test_help_imports_no_torch_numba_or_case_study():
    modules, out = _loaded_after("--help")
    assert "usage: wield" in out and "compare" in out
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))
    plugins = sorted(m for m in modules if m.endswith(".plugin") or m.startswith("wield_examples."))
    assert not plugins, plugins


@pytest.mark.parametrize("command", HELP_COMMANDS, ids=" ".join)
def test_every_commands_help_imports_no_torch_pandas_or_scipy(command):
    modules, out = _loaded_after(*command, "--help")
    assert out.startswith("usage: wield " + " ".join(command))
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))


def test_the_lazy_packages_export_every_name_they_list():
    """``wield.agents``, ``wield.demonstrations``, ``workloads`` and ``workloads.graphs`` import their modules on
    first use (``wield.lazy``): every name of ``__all__`` still resolves, to the object of its module."""
    script = ("import importlib, json\n"
              "bad = []\n"
              "for name in ('wield.agents', 'wield.demonstrations', 'workloads', 'workloads.graphs'):\n"
              "    package = importlib.import_module(name)\n"
              "    bad += [f'{name}.{item}' for item in package.__all__ if getattr(package, item, None) is None]\n"
              "    bad += [f'{name}.{item} not in dir()' for item in package.__all__ if item not in dir(package)]\n"
              "from wield.agents import DQNConfig\n"
              "from wield.agents.dqn import DQNConfig as same\n"
              "bad += [] if DQNConfig is same else ['DQNConfig differs']\n"
              "print(json.dumps(bad))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_main_imports_nothing_heavy_before_the_numerics_mode_is_applied():
    """``wield.cli.main`` sets the arithmetic (``apply_numerics_mode``) before torch may be imported: importing
    the command's modules and building the whole parser import none of the heavy libraries."""
    script = ("import json, sys\n"
              "from wield.cli.main import build_parser\n"
              "build_parser()\n"
              "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert not set(json.loads(done.stdout.strip().splitlines()[-1])) & set(HEAVY)


def test_no_help_text_says_default_none(capsys, benchmark_script):
    """An option without a default shows no ``(default: None)`` (wield.cli.formatting); the others keep theirs."""
    benchmark = benchmark_script("cli_startup")
    from wield.cli import main

    texts = {}
    for path in benchmark.command_paths():
        with pytest.raises(SystemExit):
            main([*path, "--help"])
        texts[" ".join(path)] = " ".join(capsys.readouterr().out.split())
    assert len(texts) >= 25 and {"run indexing", "compare scheduling", "demonstrate indexing", "db start"} <= set(texts)
    assert not [path for path, text in texts.items() if "(default: None)" in text]
    assert "(default: 200)" in texts["run indexing"] and "(default: C0)" in texts["progress indexing"]


def test_a_case_study_help_loads_only_that_case_study():
    modules, out = _loaded_after("run", "caching", "--help")
    assert "--frames" in out and "--seed" in out  # the case study's own options and the core's
    assert "wield_examples.caching.plugin" in modules
    assert not any(m.startswith(("case_studies.placement", "case_studies.scheduling")) for m in modules)
    assert "case_studies.indexing.plugin" not in modules


def test_run_help_lists_every_case_study_with_its_description():
    _, out = _loaded_after("run", "--help")
    for name in ("caching", "indexing", "placement", "scheduling"):
        assert name in out
    assert "buffer-pool page eviction" in out


def test_a_case_study_without_the_command_is_refused_in_one_line(capsys):
    from wield.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["demonstrate", "caching", "--out", "x"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "case study 'caching' has no demonstration hook" in err


def test_indexing_names_its_learner_with_method_like_every_case_study_and_agent_still_works(capsys):
    from wield.cli.main import build_parser

    for flag in ("--method", "--agent"):
        args = build_parser().parse_args(["run", "indexing", flag, "dqfd"])
        assert args.agent == "dqfd"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "indexing", "--help"])
    text = capsys.readouterr().out
    assert "--method METHOD, --agent METHOD" in text
    assert "(default: True)" not in text  # --no-cost-cache's help says what its default means
