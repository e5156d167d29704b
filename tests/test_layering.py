"""`protocols` is pure mathematics: it must never import the runner or its dependencies.

Allowed beside the standard library: numpy, scipy, dp_accounting (Google's privacy loss
distributions, used by protocols.accounting to compose rounds) and mpmath (arbitrary precision,
for the certified arithmetic of the exact binary-RR curve; a declared dependency, which
dp_accounting needs too).
"""

import ast
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
ROOT = REPO / "protocols"
#: What protocols may import besides the standard library and itself.
ALLOWED = {"numpy", "scipy", "dp_accounting", "mpmath", "shufflesim.protocols"}


def _imported_roots(path: pathlib.Path) -> set[str]:
    """Top-level names a module imports; the project's own as "shufflesim.<package>"."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    roots = set()
    for name in names:
        parts = name.split(".")
        roots.add(".".join(parts[:2]) if parts[0] == "shufflesim" else parts[0])
    return roots


def test_protocols_imports_only_numerics():
    files = sorted(ROOT.rglob("*.py"))
    assert files, "protocols package has no modules"
    offenders = {
        str(f.relative_to(ROOT)): sorted(_imported_roots(f) - ALLOWED - sys.stdlib_module_names)
        for f in files
    }
    offenders = {k: v for k, v in offenders.items() if v}
    assert not offenders, f"protocols must not import {offenders}"


def test_the_check_sees_a_forbidden_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import numpy\nfrom shufflesim.simulator.batch import run\nimport pandas\n")
    assert _imported_roots(module) - ALLOWED - sys.stdlib_module_names == {
        "shufflesim.simulator", "pandas"}


def test_every_import_uses_the_installed_package_name():
    """The folders install as shufflesim.protocols and shufflesim.simulator: a bare
    ``import protocols`` would only work from the repository root (and load a second copy)."""
    files = [f for d in ("protocols", "simulator", "tests") for f in (REPO / d).rglob("*.py")]
    bare = {str(f.relative_to(REPO)): sorted(_imported_roots(f) & {"protocols", "simulator"})
            for f in files}
    assert not {k: v for k, v in bare.items() if v}


def test_validators_accept_numpy_scalars_and_reject_nan():
    import numpy as np
    import pytest

    from shufflesim.protocols.errors import (
        ParameterError,
        require_int_at_least,
        require_positive_finite,
    )
    from shufflesim.protocols.randomizers import make_randomizer

    require_int_at_least("n", np.int64(4), 2)
    require_positive_finite("epsilon0", np.float64(0.5))
    with pytest.raises(ParameterError, match="n = 1"):
        require_int_at_least("n", 1, 2)
    laplace = make_randomizer("laplace", epsilon0=1.0)
    with pytest.raises(ParameterError, match="values = nan"):
        laplace.check_values(np.array([0.5, np.nan]))


def test_default_output_groups_keep_tiny_probabilities_apart():
    """Outputs whose probabilities are tiny but whose ratios differ must stay in separate groups
    (an absolute rounding would merge them and bias blanket bounds)."""
    import numpy as np

    from shufflesim.protocols.randomizers import Randomizer, make_randomizer

    class Tiny(type(make_randomizer("krr", epsilon0=1.0, domain_size=3))):
        def output_pmf(self, inputs=None):
            pmf = np.array([[1e-17, 3e-17, 1.0 - 4e-17], [2e-17, 1e-17, 1.0 - 3e-17],
                            [1e-17, 1e-17, 1.0 - 2e-17]])
            return pmf if inputs is None else pmf[np.asarray(inputs)]

    groups = Randomizer.output_groups(Tiny(epsilon0=1.0, domain_size=3), (0, 1))
    assert groups.mass.shape[1] == 3
