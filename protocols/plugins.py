"""The built-in plug-ins of ``shufflesim.protocols``, as data: for each registry, the ordered
modules that register into it (docs/architecture.md, "Registries and plug-ins").

Nothing here is imported until a registry is first read: the registry
(:class:`~shufflesim.protocols.registry.Registry`, ``declared="...:NAME"``) then imports the
modules of its tuple, in order, and sorts its items by it. A new plug-in module adds one line
to its tuple; a third party uses the entry-point group ``shufflesim.plugins`` instead.
"""

from __future__ import annotations

_R = "shufflesim.protocols.randomizers."
_E = "shufflesim.protocols.estimators."
_B = "shufflesim.protocols.bounds."

#: Local randomizers (protocols/randomizers/registry.py, ``RANDOMIZERS``).
RANDOMIZERS: tuple[str, ...] = tuple(_R + m for m in (
    "brr",
    "duchi",
    "gaussian",
    "hadamard",
    "krr",
    "laplace",
    "local_hash",
    "metric.laplace_metric",
    "metric.planar",
    "metric.witch_hat",
    "multi_message.balcer",
    "multi_message.balls_into_bins",
    "multi_message.cheu",
    "multi_message.dump",
    "oue",
    "piecewise",
    "rappor",
    "subset",
    "summation",
))

#: Estimators (protocols/estimators/registry.py, ``ESTIMATORS``).
ESTIMATORS: tuple[str, ...] = tuple(_E + m for m in (
    "frequency",
    "location",
    "mean",
    "multi_message",
    "personalized",
    "sum",
))

#: Amplification bounds (protocols/bounds/spec.py, ``BOUNDS``).
BOUNDS: tuple[str, ...] = tuple(_B + m for m in (
    "numerical.variation_ratio",
    "numerical.optimal",
    "numerical.clones",
    "numerical.metric",
    "numerical.brr_exact",
    "numerical.krr_exact",
    "numerical.krr_relabel",
    "closed_form.blanket",
    "closed_form.blanket_randomizer",
    "closed_form.blanket_laplace",
    "closed_form.efmrtt",
    "closed_form.fmt21",
    "closed_form.gaussian_sum",
    "closed_form.gdp",
    "multi_message.bounds",
    "personalized.bounds",
))

__all__ = ["BOUNDS", "ESTIMATORS", "RANDOMIZERS"]
