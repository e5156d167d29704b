"""The built-in plug-ins of ``shufflesim.protocols``, as data: for each registry, the ordered
modules that register into it (docs/architecture.md, "Registries and plug-ins").

Nothing here is imported until a registry is first read: the registry
(:class:`~shufflesim.protocols.registry.Registry`, ``declared="...:NAME"``) then imports the
modules of its tuple, in order, and sorts its items by it. ``RANDOMIZERS`` maps each name to
its ``"module:class"`` instead (its modules in that order): one randomizer is looked up by
importing its module alone. A new plug-in module adds one line to its tuple (a new
randomizer: one line per name); a third party uses the entry-point group
``shufflesim.plugins`` instead.
"""

from __future__ import annotations

_R = "shufflesim.protocols.randomizers."
_E = "shufflesim.protocols.estimators."
_B = "shufflesim.protocols.bounds."

#: Local randomizers (protocols/randomizers/registry.py, ``RANDOMIZERS``): each built-in's name
#: -> ``"module:class"``, so that looking up one name imports only its module (issue 32).
RANDOMIZERS: dict[str, str] = {name: _R + ref for name, ref in (
    ("brr", "brr:BinaryRR"),
    ("duchi", "duchi:Duchi"),
    ("gaussian", "gaussian:Gaussian"),
    ("hr", "hadamard:HadamardResponse"),
    ("krr", "krr:KRR"),
    ("laplace", "laplace:Laplace"),
    ("laplace_binary", "laplace:LaplaceBinary"),
    ("blh", "local_hash:BinaryLocalHash"),
    ("olh", "local_hash:OptimizedLocalHash"),
    ("laplace_metric", "metric.laplace_metric:LaplaceMetric"),
    ("planar_laplace", "metric.planar:PlanarLaplace"),
    ("witch_hat", "metric.witch_hat:WitchHat"),
    ("balcer", "multi_message.balcer:Balcer"),
    ("balls_into_bins", "multi_message.balls_into_bins:BallsIntoBins"),
    ("cheu", "multi_message.cheu:Cheu"),
    ("pure_dump", "multi_message.dump:PureDump"),
    ("mix_dump", "multi_message.dump:MixDump"),
    ("oue", "oue:OUE"),
    ("piecewise", "piecewise:Piecewise"),
    ("rappor", "rappor:RAPPOR"),
    ("subset", "subset:SubsetSelection"),
    ("summation", "summation:Summation"),
)}

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
