"""Every Python snippet of README.md runs as written, except that training budgets are cut to a few steps."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SNIPPETS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.DOTALL)


def test_the_readme_has_python_snippets():
    assert len(SNIPPETS) >= 2


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_readme_snippet_runs(index: int, tmp_path: Path):
    # .learn(20_000) becomes .learn(256): the snippet's code paths all run, in seconds rather than minutes.
    code, cut = re.subn(r"\.learn\([0-9_]+\)", ".learn(256)", SNIPPETS[index])
    code = code.replace('"MlpPolicy", env,', '"MlpPolicy", env, n_steps=128, batch_size=64,') if cut else code
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                            timeout=110)
    assert result.returncode == 0, f"README snippet {index}:\n{code}\n{result.stderr[-3000:]}"
