"""The install contract of issues 13 and 28: the folders protocols/ and simulator/ install as the
import packages shufflesim.protocols and shufflesim.simulator, and simulator/api/ as the package
shufflesim itself (pyproject's package-dir mapping), for an editable install and for a wheel;
simulator/api/ is not importable a second time as shufflesim.simulator.api."""

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


API = ("simulator", "api")  # the folder of the package shufflesim itself


def import_name(folder: pathlib.Path) -> str:
    """The import name of a package folder of the repository."""
    parts = folder.relative_to(REPO).parts
    if parts[:2] == API:
        return ".".join(("shufflesim", *parts[2:]))
    return "shufflesim." + ".".join(parts)


def _folder_packages() -> set[str]:
    """Every folder with an __init__.py under protocols/ and simulator/, as its import name."""
    return {import_name(init.parent)
            for top in ("protocols", "simulator") for init in (REPO / top).rglob("__init__.py")}


def test_the_package_list_names_every_folder():
    """A folder missing from pyproject's list would be left out of the wheel (the editable
    install would still find it)."""
    listed = set(SETUPTOOLS["packages"])
    assert listed == _folder_packages(), (
        f"add to [tool.setuptools] packages: {sorted(_folder_packages() - listed)}; "
        f"remove: {sorted(listed - _folder_packages())}")


def test_the_two_folders_map_to_the_shufflesim_names():
    assert SETUPTOOLS["package-dir"] == {"shufflesim": "simulator/api",
                                         "shufflesim.protocols": "protocols",
                                         "shufflesim.simulator": "simulator"}
    assert PYPROJECT["project"]["scripts"]["shufflesim"] == "shufflesim.simulator.cli:entry"


def test_the_editable_install_imports_the_repository_folders():
    import shufflesim
    import shufflesim.protocols
    import shufflesim.simulator

    assert getattr(shufflesim, "__file__", None) is not None, (
        "shufflesim is a namespace package here: this editable install predates simulator/api/ "
        "(issue 28); reinstall it: pip install --no-deps -e .")
    assert pathlib.Path(shufflesim.__file__).parent == REPO / "simulator" / "api"
    assert pathlib.Path(shufflesim.protocols.__file__).parent == REPO / "protocols"
    assert pathlib.Path(shufflesim.simulator.__file__).parent == REPO / "simulator"
    script = [e for e in importlib.metadata.entry_points(group="console_scripts")
              if e.name == "shufflesim"]
    assert [e.value for e in script] == ["shufflesim.simulator.cli:entry"]


def test_the_api_folder_is_not_importable_under_its_folder_name():
    """One module, one name: shufflesim.simulator.api would be a second copy of shufflesim
    (second copies of its functions' modules), so it refuses to import."""
    done = subprocess.run([sys.executable, "-c", "import shufflesim.simulator.api"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode != 0
    assert "import shufflesim" in done.stderr.splitlines()[-1]


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
    assert "shufflesim/__init__.py" in names and "shufflesim/py.typed" in names
    assert not any(n.startswith(("protocols/", "simulator/", "shufflesim/simulator/api"))
                   for n in names)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True,
                   timeout=900)
    code = ("import shufflesim, shufflesim.protocols as p, shufflesim.simulator as s; "
            "print(p.__file__); print(s.__file__); print(shufflesim.__file__); "
            "print(shufflesim.bounds('krr', epsilon0=1.0, domain_size=2, n=1000, delta=1e-6, "
            "methods='optimal-blanket').epsilon[0])")
    done = subprocess.run([str(python), "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, check=True, timeout=120)
    assert str(venv) in done.stdout and str(REPO) not in done.stdout
    assert float(done.stdout.split()[-1]) > 0
    listed = subprocess.run([str(venv / "bin" / "shufflesim"), "list"], cwd=tmp_path,
                            capture_output=True, text=True, check=False, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "krr" in listed.stdout and "optimal-blanket" in listed.stdout
