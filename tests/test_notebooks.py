"""The notebooks run top to bottom with a real Jupyter kernel (nbclient), so they never rot.

The three run at once, each in its own process with its own kernel and work directory (they share nothing
but the cache, which takes concurrent users): on two cores that takes about half the time of running them
one after the other."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))

RUNNER = """import sys
import nbformat
from nbclient import NotebookClient

source, executed, workdir = sys.argv[1:4]
notebook = nbformat.read(source, as_version=4)
NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": workdir}}).execute()
nbformat.write(notebook, executed)
"""


def test_there_are_the_three_notebooks_and_they_are_stored_without_outputs():
    assert [p.name[:2] for p in NOTEBOOKS] == ["01", "02", "03"]
    for path in NOTEBOOKS:
        cells = nbformat.read(path, as_version=4).cells
        assert all(not c.get("outputs") and c.get("execution_count") is None for c in cells if c.cell_type == "code")


@pytest.fixture(scope="module")
def executed(tmp_path_factory) -> dict[str, tuple[int, str, Path, Path]]:
    """Every notebook executed, concurrently: per notebook (exit code, stderr, executed copy, work dir)."""
    running = {}
    for path in NOTEBOOKS:
        base = tmp_path_factory.mktemp(path.stem)
        env = {**os.environ, "WIELD_NOTEBOOK_DIR": str(base / "work"), "WIELD_TORCH_THREADS": "1",
               "MPLBACKEND": "Agg"}
        process = subprocess.Popen([sys.executable, "-c", RUNNER, str(path), str(base / "executed.ipynb"), str(base)],
                                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        running[path.stem] = (process, base)
    results = {}
    for stem, (process, base) in running.items():
        _, stderr = process.communicate(timeout=600)
        results[stem] = (process.returncode, stderr, base / "executed.ipynb", base / "work")
    return results


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes(path, executed):
    code, stderr, notebook_path, work = executed[path.stem]
    assert code == 0, stderr[-3000:]
    notebook = nbformat.read(notebook_path, as_version=4)
    errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    assert list(work.rglob("report.md")), "every notebook ends by writing a report"
