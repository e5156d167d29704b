"""Numerical bounds: decompositions of a randomizer into atom sets, their composition, the
optimal blanket and exact lower bounds (optimal), the variation-ratio bounds and the numerical
clone bounds."""
