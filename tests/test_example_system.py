"""The new-system guide's example (wield_examples/scheduling, outside wield/) under run, --class, compare and report."""

from __future__ import annotations

import ast
import io
import json
import tokenize
from pathlib import Path

from gymnasium.utils.env_checker import check_env

from wield.analysis import load_results, write_report
from wield.cli import main
from wield.envs import WieldEnv

EXAMPLE = Path(__file__).resolve().parents[1] / "wield_examples" / "scheduling"
SMALL = ["--jobs", "10", "--episodes", "10", "--quiet"]


def code_lines(path: Path) -> int:
    """Lines holding code: no blank lines, comments or docstrings."""
    source = path.read_text()
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            docstrings |= set(range(body[0].lineno, body[0].end_lineno + 1))
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                              tokenize.ENDMARKER):
            lines |= set(range(token.start[0], token.end[0] + 1))
    return len(lines - docstrings)


def test_example_is_small_uses_only_the_public_api_and_lives_outside_wield():
    files = sorted(EXAMPLE.glob("*.py"))
    assert sum(code_lines(path) for path in files) < 100
    for path in files:
        imported = {node.module.split(".")[0] for node in ast.walk(ast.parse(path.read_text()))
                    if isinstance(node, ast.ImportFrom) and node.module}
        assert imported <= {"wield", "wield_examples", "gymnasium", "numpy", "types"}, (path, imported)


def test_example_environment_passes_the_gymnasium_checker():
    from wield_examples.scheduling.system import Servers, ServersConverter, ServersSchema, job_schedule

    schema = ServersSchema(3)
    env = WieldEnv(Servers(3), schema, ServersConverter(schema), job_schedule([1, 2], 5))
    check_env(env, skip_render_check=True)
    observation, _ = env.reset(seed=0)
    total = 0.0
    for _ in range(5):
        observation, reward, terminated, _, info = env.step(0)
        total += reward
    assert terminated and info["metrics"]["makespan"] > 0 and total < 0


def test_example_runs_under_class_compare_and_report(tmp_path):
    assert main(["run", "scheduling", *SMALL, "--out", str(tmp_path / "single")]) == 0
    assert main(["run", "scheduling", "--class", "C2", "--trials", "2", *SMALL, "--out", str(tmp_path / "c2")]) == 0
    classification = json.loads((tmp_path / "c2" / "classification.json").read_text())
    assert classification["s"] == 2 and classification["n"] == 10 * 10
    report = write_report(tmp_path / "c2", tmp_path / "c2-report")
    assert classification["label"] in report.read_text()

    out = tmp_path / "compare"
    assert main(["compare", "scheduling", "--class", "C2", "--trials", "2", *SMALL,
                 "--methods", "dqn,round-robin,random", "--out", str(out)]) == 0
    results = load_results(out)
    assert results.kind == "comparison" and results.learners == ["dqn", "round-robin", "random"]
    rows = results.per_method()
    assert len(rows) == 2 * 4  # three compared methods and earliest-finish, measured beside them
    # every method's trial i ran on the same workload: the shared reference scores 0 in each
    assert (rows.loc[rows["method"] == "round-robin", "mean_completion_improvement"] == 0).all()
    mean = rows.groupby("method")["mean_completion_improvement"].mean()
    assert mean["dqn"] > mean["random"] + 0.1  # learning happened: far better than random assignment
    assert main(["report", str(out), "--format", "html"]) == 0
    page = (out / "report" / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 3 and "C2(n=100, s=2" in page


def test_the_guide_lists_the_example_verbatim():
    guide = (Path(__file__).resolve().parents[1] / "docs" / "new-system.md").read_text()
    for name in ("system.py", "plugin.py"):
        assert f"```python\n{(EXAMPLE / name).read_text()}```" in guide, f"docs/new-system.md lists an old {name}"


def test_rule_demonstrations_pretrain_dqfd_past_round_robin():
    """The guide's DQfD snippet: demonstrations from the labelling rule alone make a placer better than
    round-robin on workloads it never saw."""
    import numpy as np

    from wield_examples.scheduling.plugin import play
    from wield_examples.scheduling.system import EarliestFinish, Servers, ServersConverter, ServersSchema, job_schedule
    from wield.agents import DQfDAgent, DQfDConfig
    from wield.demonstrations import DemonstrationWorkflow

    schema = ServersSchema(4)
    converter = ServersConverter(schema)
    trace = [job_schedule([seed], 16).task_for_episode(0) for seed in range(8)]
    dataset = DemonstrationWorkflow(Servers(4), converter).label_trace(trace, [EarliestFinish()])
    agent = DQfDAgent(schema.state_space, schema.action_space, DQfDConfig(learning_rate=1e-3, gamma=0.5),
                      seed=0, demonstration_capacity=len(dataset))
    assert agent.add_demonstrations(dataset) == len(dataset) == 8 * 16
    agent.pretrain(300)
    for seed in (100, 101):  # unseen workloads
        jobs = job_schedule([seed], 16).task_for_episode(0)
        learned = play(jobs, 4, lambda q, c: converter.agent_to_system_action(
            agent.act(converter.system_to_agent_state(q, c), explore=False), c))
        round_robin = play(jobs, 4, lambda q, c: (c["item"], c["step"] % 4))
        assert np.mean(learned["completions"]) < 0.8 * np.mean(round_robin["completions"])
