"""The install contract of issue 13: the folders protocols/ and simulator/ install as the import
packages shufflesim.protocols and shufflesim.simulator (pyproject's package-dir mapping), for an
editable install and for a wheel."""

from __future__ import annotations

import importlib.metadata
import pathlib
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def _folder_packages() -> set[str]:
    """Every folder with an __init__.py under protocols/ and simulator/, as its import name."""
    return {"shufflesim." + ".".join(init.parent.relative_to(REPO).parts)
            for top in ("protocols", "simulator") for init in (REPO / top).rglob("__init__.py")}


def test_the_package_list_names_every_folder():
    """A folder missing from pyproject's list would be left out of the wheel (the editable
    install would still find it)."""
    listed = set(SETUPTOOLS["packages"])
    assert listed == _folder_packages(), (
        f"add to [tool.setuptools] packages: {sorted(_folder_packages() - listed)}; "
        f"remove: {sorted(listed - _folder_packages())}")


def test_the_two_folders_map_to_the_shufflesim_names():
    assert SETUPTOOLS["package-dir"] == {"shufflesim.protocols": "protocols",
                                         "shufflesim.simulator": "simulator"}
    assert PYPROJECT["project"]["scripts"]["shufflesim"] == "shufflesim.simulator.cli:main"


def test_the_editable_install_imports_the_repository_folders():
    import shufflesim.protocols
    import shufflesim.simulator

    assert pathlib.Path(shufflesim.protocols.__file__).parent == REPO / "protocols"
    assert pathlib.Path(shufflesim.simulator.__file__).parent == REPO / "simulator"
    script = [e for e in importlib.metadata.entry_points(group="console_scripts")
              if e.name == "shufflesim"]
    assert [e.value for e in script] == ["shufflesim.simulator.cli:main"]


@pytest.mark.slow
def test_a_wheel_installs_into_a_fresh_venv_and_runs(tmp_path):
    """Build the wheel, install it into a fresh virtual environment (dependencies from the
    package index or pip's cache), import both packages and run ``shufflesim list``."""
    source = tmp_path / "source"  # a copy: building writes build/ beside the sources
    skipped = shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__")

    def ignore(folder, names):
        top = {"results"} if pathlib.Path(folder) == REPO else set()
        return set(skipped(folder, names)) | (top & set(names))

    shutil.copytree(REPO, source, ignore=ignore)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                    str(tmp_path / "dist"), str(source)], check=True, timeout=600)
    wheel = next((tmp_path / "dist").glob("shufflesim-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "shufflesim/protocols/__init__.py" in names
    assert "shufflesim/simulator/cli/__init__.py" in names
    assert "shufflesim/protocols/py.typed" in names
    assert not any(n.startswith(("protocols/", "simulator/", "shufflesim/__init__")) for n in names)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True,
                   timeout=900)
    code = ("import shufflesim.protocols as p, shufflesim.simulator as s; "
            "print(p.__file__); print(s.__file__)")
    done = subprocess.run([str(python), "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, check=True, timeout=120)
    assert str(venv) in done.stdout and str(REPO) not in done.stdout
    listed = subprocess.run([str(venv / "bin" / "shufflesim"), "list"], cwd=tmp_path,
                            capture_output=True, text=True, check=False, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "krr" in listed.stdout and "optimal-blanket" in listed.stdout
