"""`protocols` is pure mathematics: it must never import the runner or its dependencies.

Allowed beside the standard library: numpy, scipy and dp_accounting (Google's privacy loss
distributions, used by protocols.accounting to compose rounds).
"""

import ast
import pathlib

FORBIDDEN = {"simulator", "simpy", "pandas", "pyarrow", "click", "dask", "matplotlib"}
ROOT = pathlib.Path(__file__).resolve().parents[1] / "protocols"


def _imported_roots(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_protocols_imports_only_numerics():
    files = sorted(ROOT.rglob("*.py"))
    assert files, "protocols package has no modules"
    offenders = {
        str(f.relative_to(ROOT)): sorted(_imported_roots(f) & FORBIDDEN) for f in files
    }
    offenders = {k: v for k, v in offenders.items() if v}
    assert not offenders, f"protocols must not import {offenders}"


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
