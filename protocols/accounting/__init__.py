"""Privacy over a deployment's lifetime: composition of shuffled rounds (issue 16).

* :mod:`~protocols.accounting.pairs`: a round's dominating pair (000 Thm 13 blanket pair, 002
  clone pair) or exact pair (000 Thm 14) as a distribution over group counts.
* :mod:`~protocols.accounting.pld`: its privacy loss distribution, discretised on the
  conservative side (connect-the-dots split for upper bounds, rounding down for lower bounds).
* :mod:`~protocols.accounting.compose`: composition over rounds with ``dp_accounting`` and the
  registry of composed methods; :mod:`~protocols.accounting.baselines` (basic, advanced) and
  :mod:`~protocols.accounting.rdp` (Renyi DP, 002 Sec. 6.1) for comparison;
  :mod:`~protocols.accounting.calibrate`: the largest per-round eps0 for a lifetime target.

docs/composition.md states what is proven and when composition through PLDs is valid.
"""

#: The public API: the package's modules (import the one you need).
__all__ = ["baselines", "calibrate", "compose", "enumeration", "pairs", "pld", "rdp", "rounds"]
