"""``shufflesim list`` knows its printed catalogue for the installed code without building it
(simulator/cli/catalogue_cache.py): from the shipped snapshot when the code it was built from
is installed (a stale snapshot is never used), else from the user's cache; the output is the
built one, a ``list`` with a fresh snapshot or a warm cache imports no plug-in, and the
digest and fingerprint follow the code."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from click.testing import CliRunner

from shufflesim.simulator.calls.catalogue import catalogue
from shufflesim.simulator.cli import catalogue_cache, main
from shufflesim.simulator.cli.commands.list import printed_forms, render


def test_the_cached_output_is_the_built_one(tmp_path, monkeypatch):
    monkeypatch.setenv("SHUFFLESIM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(catalogue_cache, "third_party", lambda: False)
    monkeypatch.setattr(catalogue_cache, "SNAPSHOT", tmp_path / "absent.json")
    first = CliRunner().invoke(main, ["list"])
    assert first.exit_code == 0, first.output
    assert first.output == render(catalogue()) + "\n"
    assert len(list(tmp_path.glob("list-*.json"))) == 1
    again = CliRunner().invoke(main, ["list"])
    assert again.output == first.output
    as_json = CliRunner().invoke(main, ["list", "--json"])
    assert '"randomizers"' in as_json.output


LIST_AND_MODULES = (
    "import sys\nfrom pathlib import Path\n"
    "from shufflesim.simulator.cli import catalogue_cache, main\n"
    "catalogue_cache.SNAPSHOT = Path(sys.argv[1]); sys.argv[0] = 'shufflesim'\n"
    "try:\n    main(['list'])\nexcept SystemExit:\n    pass\n"
    "print(sorted(m for m in ('scipy', 'pandas', 'shufflesim.protocols.bounds.spec',"
    " 'shufflesim.protocols.randomizers.krr') if m in sys.modules), file=sys.stderr)")


def _list_in_a_fresh_process(snapshot, cache):
    env = dict(os.environ, SHUFFLESIM_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, "-c", LIST_AND_MODULES, str(snapshot)],
                          capture_output=True, text=True, env=env, timeout=600)


def test_a_warm_list_imports_no_plug_in(tmp_path):
    cold = _list_in_a_fresh_process(tmp_path / "absent.json", tmp_path)
    warm = _list_in_a_fresh_process(tmp_path / "absent.json", tmp_path)
    assert "shufflesim.protocols.randomizers.krr" in cold.stderr
    assert warm.stderr.strip() == "[]", warm.stderr
    assert warm.stdout == cold.stdout


def test_a_fresh_snapshot_answers_a_cold_list_without_plug_ins(tmp_path):
    snapshot = catalogue_cache.write_snapshot(printed_forms(), tmp_path / "snapshot.json")
    cold = _list_in_a_fresh_process(snapshot, tmp_path / "empty-cache")
    assert cold.stderr.strip() == "[]", cold.stderr
    assert cold.stdout == printed_forms()["text"] + "\n"
    assert not (tmp_path / "empty-cache").exists()  # nothing built, nothing stored


def test_a_stale_snapshot_is_never_used(tmp_path, monkeypatch):
    snapshot = catalogue_cache.write_snapshot(printed_forms(), tmp_path / "snapshot.json")
    assert catalogue_cache.from_snapshot(snapshot) == printed_forms()
    data = json.loads(snapshot.read_text())
    data["text"] = "stale"
    data["digest"] = "0" * 64  # as after an edit of one of its files
    snapshot.write_text(json.dumps(data))
    assert catalogue_cache.from_snapshot(snapshot) is None
    data["files"].append("protocols/no_such_module.py")
    snapshot.write_text(json.dumps(data))
    assert catalogue_cache.from_snapshot(snapshot) is None


def test_the_content_digest_follows_every_listed_file(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text("x = 1\n")
    monkeypatch.setattr(catalogue_cache, "_roots", lambda: {"protocols": tmp_path})
    before = catalogue_cache.content_digest(["protocols/m.py"])
    assert catalogue_cache.content_digest(["protocols/m.py"]) == before
    (tmp_path / "m.py").write_text("x = 2\n")  # same size, same name: the content counts
    assert catalogue_cache.content_digest(["protocols/m.py"]) != before
    assert catalogue_cache.content_digest(["protocols/absent.py"]) is None


def test_the_shipped_snapshot_when_fresh_is_the_built_catalogue():
    """The shipped snapshot goes stale with any change to a file it lists (then it is not
    used: ``python -m shufflesim.simulator.cli.snapshot`` writes it again); when it is fresh,
    it prints what building prints."""
    printed = catalogue_cache.from_snapshot()
    if printed is not None:
        assert printed == printed_forms()
    assert catalogue_cache.SNAPSHOT.is_file()


def test_the_fingerprint_follows_the_code(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text("x = 1\n")
    monkeypatch.setattr(catalogue_cache, "_package_folders", lambda: [tmp_path])
    before = catalogue_cache.fingerprint()
    assert catalogue_cache.fingerprint() == before
    (tmp_path / "m.py").write_text("x = 22\n")
    assert catalogue_cache.fingerprint() != before


def test_third_party_plug_ins_are_never_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("SHUFFLESIM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(catalogue_cache, "third_party", lambda: True)
    catalogue_cache.store({"text": "t", "json": "{}"})
    assert not list(tmp_path.iterdir())
    assert catalogue_cache.load() is None


def test_the_shipped_snapshot_is_current():
    """The snapshot shipped with the code answers `list` (session 14: a change to a listed
    module without `python -m shufflesim.simulator.cli.snapshot` left it stale, and a cold
    `list` took 1.1 s instead of 0.1 s, silently)."""
    assert catalogue_cache.from_snapshot() == printed_forms(), (
        "stale simulator/cli/catalogue_snapshot.json: run python -m "
        "shufflesim.simulator.cli.snapshot")
