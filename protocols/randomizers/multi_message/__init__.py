"""Multi-message shuffle protocols (001 Sec. 4, Table 3): one input message and input-independent
blanket messages per user. base.py states the contract; one module per protocol family."""

from shufflesim.protocols.randomizers.multi_message import (
    balcer,  # noqa: F401  (registers)
    balls_into_bins,  # noqa: F401  (registers)
    cheu,  # noqa: F401  (registers)
    dump,  # noqa: F401  (registers)
)
from shufflesim.protocols.randomizers.multi_message.base import (
    MULTI_MESSAGE,
    MessageGroups,
    MessageSupport,
    MultiMessageRandomizer,
)

__all__ = ["MULTI_MESSAGE", "MessageGroups", "MessageSupport", "MultiMessageRandomizer"]
