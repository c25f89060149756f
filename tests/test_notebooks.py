"""The notebooks run top to bottom with a real Jupyter kernel (nbclient), so they never rot."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_the_three_notebooks_and_they_are_stored_without_outputs():
    assert [p.name[:2] for p in NOTEBOOKS] == ["01", "02", "03"]
    for path in NOTEBOOKS:
        cells = nbformat.read(path, as_version=4).cells
        assert all(not c.get("outputs") and c.get("execution_count") is None for c in cells if c.cell_type == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes(path, tmp_path, monkeypatch):
    monkeypatch.setenv("WIELD_NOTEBOOK_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("WIELD_TORCH_THREADS", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
                   ).execute()
    errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    assert list((tmp_path / "work").rglob("report.md")), "every notebook ends by writing a report"
