"""Every built-in bound module, imported once so that each registers its bounds in
:data:`shufflesim.protocols.bounds.spec.BOUNDS` (protocols.bounds.catalogue imports this module).

A new bound in an existing module needs nothing here; a new bound module adds one line.
"""

# ruff: noqa: F401  (imported for their registrations)
from shufflesim.protocols.bounds.closed_form import (
    blanket,
    blanket_randomizer,
    efmrtt,
    fmt21,
    gaussian_sum,
    gdp,
)
from shufflesim.protocols.bounds.multi_message import bounds as multi_message_bounds
from shufflesim.protocols.bounds.numerical import (
    brr_exact,
    clones,
    metric,
    optimal,
    variation_ratio,
)
from shufflesim.protocols.bounds.personalized import bounds
