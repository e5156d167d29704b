"""The built-in plug-ins of ``shufflesim.protocols``, as data: for each registry, the ordered
modules that register into it (docs/architecture.md, "Registries and plug-ins").

Nothing here is imported until a registry is first read: the registry
(:class:`~shufflesim.protocols.registry.Registry`, ``declared="...:NAME"``) then imports the
modules of its tuple, in order, and sorts its items by it. ``RANDOMIZERS`` maps each name to
its ``"module:class"`` instead (its modules in that order), and ``BOUNDS`` each name to its
module: one randomizer, or one bound, is looked up by importing its module alone. A new plug-in
module adds one line to its tuple (a new randomizer or bound: one entry per name); a third
party uses the entry-point group ``shufflesim.plugins`` instead.
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

#: Amplification bounds (protocols/bounds/spec.py, ``BOUNDS``): each built-in bound's name -> the
#: module that exports it (several per module, in their catalogue order), so that computing one
#: bound imports only its module (issue 32). What the catalogue needs to know of a bound before
#: computing it (kind, status, reference, which randomizers it applies to) is declared beside,
#: in protocols/bounds/declared.py.
BOUNDS: dict[str, str] = {name: _B + module for module, names in (
    ("numerical.variation_ratio", ("variation-ratio", "variation-ratio-generic",
                                   "variation-ratio-thm4.7", "variation-ratio-thm4.8",
                                   "variation-ratio-lower")),
    ("numerical.optimal", ("optimal-blanket", "exact-lower")),
    ("numerical.clones", ("fmt21_numerical", "stronger_clone_numerical")),
    ("numerical.metric", ("metric-variation-ratio", "metric-pair-lower")),
    ("numerical.brr_exact", ("brr-exact", "brr-exact-lower")),
    ("numerical.krr_exact", ("krr-exact", "krr-exact-lower")),
    ("numerical.krr_relabel", ("krr-relabel",)),
    ("closed_form.blanket", ("blanket_krr_thm31", "blanket_hoeffding_generic",
                             "blanket_bennett_generic")),
    ("closed_form.blanket_randomizer", ("blanket_hoeffding", "blanket_bennett")),
    ("closed_form.blanket_laplace", ("blanket_hoeffding_laplace", "blanket_bennett_laplace")),
    ("closed_form.efmrtt", ("efmrtt19",)),
    ("closed_form.fmt21", ("fmt21_closed", "fmt21_approx_dp", "fmt21_krr_closed")),
    ("closed_form.gaussian_sum", ("gaussian-sum-lower",)),
    ("closed_form.gdp", ("gspa-gdp",)),
    ("multi_message.bounds", ("multi-message-variation-ratio", "multi-message-exact-upper",
                              "multi-message-exact-lower")),
    ("personalized.bounds", ("gspa-gdp-personalized", "optimal-blanket-personalized",
                             "exact-lower-personalized", "optimal-blanket-max-budget",
                             "optimal-blanket-tagged", "baseline-min-budget")),
) for name in names}

__all__ = ["BOUNDS", "ESTIMATORS", "RANDOMIZERS"]
