"""protocols/import_gc.py: imports without garbage-collector passes in a command's process.

Each case runs in a fresh interpreter (the switch is for the whole process), on throw-away
modules written to a temporary folder: one records whether the collector ran during its import
and imports a second one (nesting), one fails."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

MODULES = {
    "outer_mod.py": "import gc\nSEEN = gc.isenabled()\nimport inner_mod\n",
    "inner_mod.py": "import gc\nSEEN = gc.isenabled()\n",
    "broken_mod.py": "import gc\nSEEN = gc.isenabled()\nraise RuntimeError('broken')\n",
}

SCRIPT = textwrap.dedent("""
    import gc, json, sys
    sys.path.insert(0, sys.argv[1])
    from shufflesim.protocols import import_gc
    if sys.argv[2] == "on":
        import_gc.for_commands()
    frozen_before = gc.get_freeze_count()
    outer = import_gc.import_module("outer_mod")
    after_outer = gc.isenabled()
    try:
        import_gc.import_module("broken_mod")
        broke = False
    except RuntimeError:
        broke = True
    print(json.dumps({
        "outer_seen": outer.SEEN, "inner_seen": sys.modules["inner_mod"].SEEN,
        "after_outer": after_outer, "after_broken": gc.isenabled(), "broke": broke,
        "frozen": gc.get_freeze_count() - frozen_before,
        "again": import_gc.import_module("outer_mod") is outer}))
""")


def _run(tmp_path, switch: str) -> dict:
    for name, text in MODULES.items():
        (tmp_path / name).write_text(text)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), switch],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_command_process_imports_with_the_collector_paused_then_resumed(tmp_path):
    got = _run(tmp_path, "on")
    assert got["outer_seen"] is False and got["inner_seen"] is False  # paused, nested too
    assert got["after_outer"] is True            # resumed after the outermost import only
    assert got["broke"] and got["after_broken"] is True  # a failed import resumes it too
    assert got["frozen"] > 0                     # what the imports made: out of later scans
    assert got["again"]                          # a module imported already is returned


def test_a_library_process_keeps_its_collector_as_it_is(tmp_path):
    got = _run(tmp_path, "off")
    assert got["outer_seen"] is True and got["inner_seen"] is True
    assert got["after_outer"] is True and got["after_broken"] is True
    assert got["frozen"] == 0


def test_click_s_test_runner_keeps_the_collector_of_its_process():
    """Only the console script's process (cli/app.py entry) pauses the collector: a command run
    through :data:`main` in a longer-lived process (click's CliRunner, a program) does not."""
    code = textwrap.dedent("""
        import gc, json
        from click.testing import CliRunner
        from shufflesim.protocols import import_gc
        from shufflesim.simulator.cli.app import main
        done = CliRunner().invoke(main, ["bound", "--randomizer", "krr", "--domain-size", "3",
                                         "--epsilon0", "1", "--n", "100", "--delta", "1e-6",
                                         "--method", "optimal-blanket", "-q"])
        print(json.dumps([done.exit_code, import_gc._state["on"], gc.get_freeze_count()]))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [0, False, 0]
