"""Multi-message shuffle protocols (001 Sec. 4, Table 3): one input message and input-independent
blanket messages per user. base.py states the contract; one module per protocol family (each
registers itself when the randomizer registry imports it: protocols/plugins.py RANDOMIZERS; the
package imports none of them, so that looking up one imports only its module, issue 32)."""

from shufflesim.protocols.randomizers.multi_message.base import (
    MULTI_MESSAGE,
    MessageGroups,
    MessageSupport,
    MultiMessageRandomizer,
)

__all__ = ["MULTI_MESSAGE", "MessageGroups", "MessageSupport", "MultiMessageRandomizer"]
