"""Every built-in bound module, imported once so that each registers its bounds in
:data:`protocols.bounds.spec.BOUNDS` (protocols.bounds.catalogue imports this module).

A new bound in an existing module needs nothing here; a new bound module adds one line.
"""

from protocols.bounds import (  # noqa: F401  (imported for their registrations)
    blanket_closed,
    clones,
    efmrtt,
    gdp,
    heterogeneous,
    optimal,
    variation_ratio,
)
