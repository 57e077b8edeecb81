"""The notebook-style walk-through (python/examples/quickstart.py) runs whole:
each of its cells checks its own result against numpy."""

import pathlib
import runpy


def test_quickstart_runs_every_cell(capsys):
    script = pathlib.Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"
    runpy.run_path(str(script), run_name="__main__")
    out = capsys.readouterr().out
    assert "quickstart: every cell ran" in out
    assert "['einsum_path', (1, 2), (0, 1)]" in out
