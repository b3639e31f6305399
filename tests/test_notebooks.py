"""Every notebook in notebooks/ runs top to bottom without an error (nbclient, this interpreter's kernel)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
KERNEL_NAME = "uno-rl-tests"


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Jupyter data dir whose only kernel runs this very interpreter (the venv's python).

    A kernel spec of our own, put first on JUPYTER_PATH, means no user or system "python3" spec can
    send the notebooks to another Python that lacks the project.
    """
    data_dir = tmp_path_factory.mktemp("jupyter")
    spec_dir = data_dir / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "uno-rl tests", "language": "python"}
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    return data_dir


#: Seconds a cell may take: a bound, not a speed claim. The training notebook's tiny run compiles the numba kernels
#: when their cache is cold, as on a clean clone: 78 s for that cell alone, and past 120 s while the other test
#: worker compiles too on 2 cores.
CELL_TIMEOUT = 600


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no .ipynb"


@pytest.mark.slow
@pytest.mark.timeout(900)  # a notebook trains and evaluates; nbclient's own limit (CELL_TIMEOUT) is per cell
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path: Path, kernel_dir: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("JUPYTER_PATH", str(kernel_dir))
    monkeypatch.setenv("MPLBACKEND", "Agg")  # the kernel inherits it: figures render off-screen
    notebook = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), \
        f"{path.name} is committed with outputs; clear them"
    client = NotebookClient(notebook, kernel_name=KERNEL_NAME, timeout=CELL_TIMEOUT,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError, naming the cell, on the first failure
