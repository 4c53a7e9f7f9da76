"""The package as a user gets it: the wheel built from this folder (the
component inside), installed into an empty folder outside the checkout,
runs the README's first example there."""

import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
REPO = HERE.parents[1]


def first_example():
    text = (HERE / "README.md").read_text()
    m = re.search(r"<!-- first-example -->\s*```python\n(.*?)```", text, re.S)
    assert m, "README.md has no first example"
    return m.group(1)


def test_the_wheel_installed_elsewhere_runs_the_readme_example(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    str(HERE), "-w", str(dist)], check=True, cwd=tmp_path)
    wheels = list(dist.glob("lakesweep-*.whl"))
    assert len(wheels) == 1, wheels
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                    str(wheels[0])], check=True, cwd=tmp_path)
    assert (site / "lakesweep" / "lakesweep.wasm").exists(), "the wheel carries the component"
    assert (site / "lakesweep" / "py.typed").exists()
    code = first_example() + "\nprint('FROM', lakesweep.__file__)\n"
    env = {"PYTHONPATH": str(site), "LAKESWEEP_REPO": str(REPO), "PATH": "/usr/bin:/bin",
           "LAKESWEEP_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert re.search(r"<Plan iceberg [0-9a-f]{12}: \d+ to delete", out.stdout), out.stdout
    assert "would delete data/" in out.stdout, out.stdout
    assert f"FROM {site}" in out.stdout, out.stdout
