"""The scenario loader imports the sections a scenario has, and no other (issue 32): checked by
the modules a fresh interpreter holds (sys.modules), never by timing. And ``shufflesim run``
refuses a file whose outline is wrong before it starts worker processes; a run imports the
producers and table schemas of the sections it has."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from shufflesim.simulator import plugins
from shufflesim.simulator.calls import run as run_call
from shufflesim.simulator.cli import main
from shufflesim.simulator.scenario import sections
from shufflesim.simulator.scenario.sections import SECTIONS, section_names

QUICKSTART = Path(__file__).resolve().parents[1] / "scenarios" / "quickstart.toml"
#: What loading quickstart (no optional section) must not import.
HEAVY = ("pandas", "pyarrow", "scipy.stats", "shufflesim.simulator.audit",
         "shufflesim.simulator.learning", "shufflesim.simulator.pipeline",
         *plugins.SECTIONS.values())

_LOAD = """
import json, sys
from shufflesim.simulator.scenario.loader import parse_scenario
from shufflesim.simulator.scenario.sections import section_names
names = section_names()
parse_scenario(open(sys.argv[1]).read(), base_dir=sys.argv[2])
print(json.dumps({"names": names, "modules": sorted(sys.modules)}))
"""


def _load_fresh(text: str, tmp_path) -> dict:
    path = tmp_path / "scenario.toml"
    path.write_text(text)
    done = subprocess.run([sys.executable, "-c", _LOAD, str(path), str(QUICKSTART.parent)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _under(modules, prefixes) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_loading_a_scenario_imports_no_section_it_does_not_have(tmp_path):
    out = _load_fresh(QUICKSTART.read_text(), tmp_path)
    assert "shufflesim.simulator.scenario.core" in out["modules"]  # the check sees the load
    assert not _under(out["modules"], HEAVY)
    assert out["names"] == section_names()  # every name, without importing a section


def test_a_section_present_imports_its_module_only(tmp_path):
    text = QUICKSTART.read_text() + '\n[bounds]\nmethods = ["exact-lower"]\ndelta = 1e-6\n'
    modules = _load_fresh(text, tmp_path)["modules"]
    assert plugins.SECTIONS["bounds"] in modules
    others = [m for name, m in plugins.SECTIONS.items() if name != "bounds"]
    assert not _under(modules, [*others, "shufflesim.simulator.audit",
                                "shufflesim.simulator.learning"])


def test_the_declared_names_are_what_the_modules_register():
    assert [name for name in SECTIONS if SECTIONS.origin(name) in plugins.SECTIONS.values()] \
        == list(plugins.SECTIONS)
    assert all(SECTIONS.origin(name) == module for name, module in plugins.SECTIONS.items())
    assert section_names() == list(sections.CORE_SECTIONS) + SECTIONS.names()


def test_a_refused_outline_starts_no_worker(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(run_call, "start", lambda *a, **k: started.append(a))
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\n[populaton]\nn = 3\n')
    result = CliRunner().invoke(main, ["run", str(path), "--workers", "2", "--out",
                                       str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "populaton = {'n': 3}: unknown key; did you mean 'population'?" in result.output
    assert not started


_RUN = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.__stderr__))
from shufflesim.simulator.cli import entry
sys.argv[0] = "shufflesim"
entry()
"""


def test_a_run_imports_the_producers_and_tables_of_its_sections_only(tmp_path):
    path = tmp_path / "quick.toml"
    path.write_text(QUICKSTART.read_text().replace("repetitions = 200", "repetitions = 2"))
    done = subprocess.run([sys.executable, "-c", _RUN, "run", str(path), "--out",
                           str(tmp_path / "out"), "--workers", "1", "-q"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stderr.strip().splitlines()[-1])
    assert (tmp_path / "out" / "quickstart" / "utility.parquet").is_file()
    assert "shufflesim.simulator.execution.runner" in modules
    assert not _under(modules, [*plugins.SECTIONS.values(), "shufflesim.simulator.audit",
                                "shufflesim.simulator.learning", "shufflesim.simulator.design",
                                "shufflesim.simulator.pipeline", "simpy", "scipy.stats"])
