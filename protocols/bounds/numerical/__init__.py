"""Numerical bounds: decompositions of a randomizer into atom sets, their composition, the
optimal blanket and exact lower bounds (optimal), the variation-ratio bounds and the numerical
clone bounds."""

#: The public API: the package's modules (import the one you need).
__all__ = [
    "atom_sets",
    "candidates",
    "clones",
    "composition",
    "decompositions",
    "optimal",
    "two_count",
    "variation_ratio",
]
