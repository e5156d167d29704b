"""The built-in bounds as data: what the catalogue knows of each before importing the module that
computes it (issue 32).

``bound --rounds T`` lists every applicable bound that does not compose with its kind, status
and reference, and ``bound`` and ``calibrate`` choose the applicable bounds before computing
them: with these facts neither imports the modules of bounds it does not compute (the
multi-message, personalized, exact binary-RR, 3-RR block or variation-ratio machinery for a
k-RR bound over rounds). The module named in protocols/plugins.py (``BOUNDS``) is imported when
its bound is computed or its BoundSpec is asked for (protocols.bounds.catalogue).

Each entry restates its module's BoundSpec (name, kind, status, further caveats, reference), in
the catalogue's order, with an applicability predicate of protocols.bounds.spec that answers as
the module's own does; tests/test_bound_facts.py checks all of it against the modules, so a
changed reference or predicate must be changed here too. A declared bound without an entry
here (a new one, a test's toy) is looked up in its module instead.
"""

from __future__ import annotations

from shufflesim.protocols.bounds.result import BoundKind as K
from shufflesim.protocols.bounds.result import BoundStatus as S
from shufflesim.protocols.bounds.spec import (
    BoundFacts,
    any_ldp,
    discrete_output,
    krr_domain,
    metric_dp,
    multi_message,
    named,
    personalized_users,
)

_VR = "001 Thm 4.2 + Thm 4.6, Alg. 1 with "
_PERSONALIZED = ("brr", "krr")  # protocols/bounds/personalized/blanket.py RANDOMIZERS

#: name -> facts, in the catalogue's order (the order of protocols/plugins.py BOUNDS).
FACTS: dict[str, BoundFacts] = {facts.name: facts for facts in (
    # numerical/variation_ratio.py (001)
    BoundFacts("variation-ratio", K.UPPER, S.STRONGER_CLONE,
               _VR + "the randomizer's (p, beta, q) (Tables 1, 5)", any_ldp),
    BoundFacts("variation-ratio-generic", K.UPPER, S.STRONGER_CLONE,
               _VR + "the generic row p = q = e^eps0, beta = tanh(eps0/2)", any_ldp),
    BoundFacts("variation-ratio-thm4.7", K.UPPER, S.STRONGER_CLONE, "001 Thm 4.7 (analytic)",
               any_ldp),
    BoundFacts("variation-ratio-thm4.8", K.UPPER, S.STRONGER_CLONE,
               "001 Thm 4.8 (asymptotic)", any_ldp),
    BoundFacts("variation-ratio-lower", K.LOWER, S.PROVEN, "001 Thm 5.1, Prop. 1, Alg. 3",
               discrete_output),
    # numerical/optimal.py (000)
    BoundFacts("optimal-blanket", K.UPPER, S.PROVEN,
               "000 Thm 13 + Alg. 7 (optimal decomposition)", any_ldp),
    BoundFacts("exact-lower", K.LOWER, S.PROVEN, "000 Thm 14 (exact for one neighbour pair)",
               any_ldp),
    # numerical/clones.py (002)
    BoundFacts("fmt21_numerical", K.UPPER, S.PROVEN, "002 Thm 3.2 (clone reduction, numerical)",
               any_ldp),
    BoundFacts("stronger_clone_numerical", K.UPPER, S.STRONGER_CLONE,
               "Feldman, McMillan, Talwar SODA 2023 stronger clone (as restated in 000 "
               "Sec. 3.3)", any_ldp),
    # numerical/metric.py (001 Table 2)
    BoundFacts("metric-variation-ratio", K.UPPER, S.STRONGER_CLONE,
               _VR + "Table 2 (d01, d_max)", metric_dp),
    BoundFacts("metric-pair-lower", K.LOWER, S.PROVEN,
               "001 Thm 5.1 post-processing of a concrete metric pair", metric_dp),
    # numerical/brr_exact.py
    BoundFacts("brr-exact", K.UPPER, S.PROVEN,
               "exact privacy curve of shuffled binary RR over every dataset (count statistic, "
               "000 Thm 12 sufficiency; blocks of datasets dominated by revealing reports)",
               named("brr", "duchi")),
    BoundFacts("brr-exact-lower", K.LOWER, S.PROVEN,
               "best dataset pair of shuffled binary RR over every count of ones among the "
               "other users (000 Thm 14 generalized to mixed others)", named("brr", "duchi")),
    # numerical/krr_exact.py, numerical/krr_relabel.py
    BoundFacts("krr-exact", K.UPPER, S.PROVEN,
               "exact privacy curve of shuffled 3-RR over every dataset pair (count statistic, "
               "000 Thm 12 sufficiency; beyond n = 100 by blocks of datasets dominated by "
               "revealing reports)", krr_domain(3, 3)),
    BoundFacts("krr-exact-lower", K.LOWER, S.PROVEN,
               "best dataset pair of shuffled k-RR over the counts of x0, x1 and the rest "
               "among the other users (000 Thm 14 generalized to mixed others)", krr_domain(3)),
    BoundFacts("krr-relabel", K.UPPER, S.PROVEN,
               "shuffled k-RR over every dataset pair: the concentrated pairs (rest at one "
               "value) dominate every configuration by a relabelling kernel, excess items "
               "revealed (derived in numerical/krr_relabel.py)", krr_domain(4)),
    # closed_form/blanket.py, blanket_randomizer.py, blanket_laplace.py (004)
    BoundFacts("blanket_krr_thm31", K.UPPER, S.PROVEN,
               "004 (Balle et al.) Thm 3.1, shuffled k-RR", named("krr")),
    BoundFacts("blanket_hoeffding_generic", K.UPPER, S.PROVEN,
               "004 Thm 5.3 (Hoeffding, generic)", any_ldp),
    BoundFacts("blanket_bennett_generic", K.UPPER, S.PROVEN,
               "004 Sec. 5.3 (Bennett, generic; corrected Lemma 5.6)", any_ldp),
    BoundFacts("blanket_hoeffding", K.UPPER, S.PROVEN,
               "004 Lemmas 5.3, 5.5 with the randomizer's blanket (k-RR: Lemma 5.7)",
               discrete_output),
    BoundFacts("blanket_bennett", K.UPPER, S.PROVEN,
               "004 Lemmas 5.3, 5.6 (corrected) with the randomizer's blanket (k-RR: Lemma 5.7)",
               discrete_output),
    BoundFacts("blanket_hoeffding_laplace", K.UPPER, S.PROVEN,
               "004 Lemmas 5.3, 5.5, 5.8 (Hoeffding, Laplace)",
               named("laplace", "laplace_binary", "laplace_metric")),
    BoundFacts("blanket_bennett_laplace", K.UPPER, S.PROVEN,
               "004 Lemmas 5.3, 5.6 (corrected), 5.8 (Bennett, Laplace)",
               named("laplace", "laplace_binary", "laplace_metric")),
    # closed_form/efmrtt.py, fmt21.py (002), gaussian_sum.py, gdp.py (003)
    BoundFacts("efmrtt19", K.UPPER, S.PROVEN,
               "Erlingsson et al. SODA 2019 (cited in 001 Sec. 2, 004 Thm 5.1): eps = 12 eps0 "
               "sqrt(log(1/delta)/n)", any_ldp),
    BoundFacts("fmt21_closed", K.UPPER, S.PROVEN, "002 (Feldman, McMillan, Talwar 2021) Thm 3.1",
               any_ldp),
    BoundFacts("fmt21_approx_dp", K.UPPER, S.PROVEN,
               "002 Thm 3.8 ((eps0, delta0)-LDP randomizers)", any_ldp),
    BoundFacts("fmt21_krr_closed", K.UPPER, S.PROVEN, "002 Thm 4.1 (k-RR specific)",
               named("krr")),
    BoundFacts("gaussian-sum-lower", K.LOWER, S.PROVEN,
               "sum of the shuffled reports (post-processing) of the pair (low, high): Balle "
               "and Wang 2018 Thm 8 at noise sigma sqrt(n)", named("gaussian")),
    BoundFacts("gspa-gdp", K.UPPER, S.APPROXIMATE,
               "003 Thm 2 (mu-GDP) + 003 Fact 3 (GDP to (eps, delta))", any_ldp,
               also=(S.STRONGER_CLONE,)),
    # multi_message/bounds.py (001 Sec. 4, Table 3)
    BoundFacts("multi-message-variation-ratio", K.UPPER, S.STRONGER_CLONE,
               "001 Thm 4.2 + Alg. 1 with Table 3 (n - 1 -> n b blanket messages, Sec. 4)",
               multi_message),
    BoundFacts("multi-message-exact-upper", K.UPPER, S.PROVEN,
               "blanket-only model, exact (protocols/bounds/multi_message/models.py)",
               multi_message),
    BoundFacts("multi-message-exact-lower", K.LOWER, S.PROVEN,
               "concrete pair, post-processed view, exact (001 Thm 5.1 style)", multi_message),
    # personalized/bounds.py (003; 000 Thm 12-14 per user)
    BoundFacts("gspa-gdp-personalized", K.UPPER, S.APPROXIMATE,
               "003 Thm 2 (mu-GDP, personalized (eps_i, delta_i)) + 003 Fact 3",
               personalized_users(), also=(S.STRONGER_CLONE,)),
    BoundFacts("optimal-blanket-personalized", K.UPPER, S.PROVEN,
               "000 Thm 12-13, common-blanket general clone for per-user budgets (derived)",
               personalized_users(*_PERSONALIZED)),
    BoundFacts("exact-lower-personalized", K.LOWER, S.PROVEN,
               "000 Thm 14 generalized to per-user budgets (derived)",
               personalized_users(*_PERSONALIZED)),
    BoundFacts("optimal-blanket-max-budget", K.UPPER, S.PROVEN,
               "000 Thm 13 at the largest budget (valid for k-RR; module docstring)",
               personalized_users(*_PERSONALIZED)),
    BoundFacts("optimal-blanket-tagged", K.UPPER, S.PROVEN,
               "000 Thm 13 per budget group (reports tagged with their budget)",
               personalized_users()),
    BoundFacts("baseline-min-budget", K.UPPER, S.PROVEN,
               "000 Thm 13 with every user at the smallest budget (another protocol)",
               personalized_users()),
)}

__all__ = ["FACTS"]
