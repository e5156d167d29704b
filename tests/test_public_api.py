"""Every package declares its public API in ``__all__``, and every name there resolves."""

import importlib
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = sorted("shufflesim." + ".".join(init.parent.relative_to(REPO).parts)
                  for top in ("protocols", "simulator")
                  for init in (REPO / top).rglob("__init__.py")
                  if init.parent != REPO / "simulator" / "api")  # that is shufflesim itself
PACKAGES.append("shufflesim")


@pytest.mark.parametrize("name", PACKAGES)
def test_package_declares_and_resolves_its_public_api(name):
    package = importlib.import_module(name)
    assert isinstance(getattr(package, "__all__", None), list | tuple), f"{name} has no __all__"
    for attribute in package.__all__:
        if not hasattr(package, attribute):
            importlib.import_module(f"{name}.{attribute}")  # a public submodule
