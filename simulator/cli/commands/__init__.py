"""CLI sub-commands: each module defines one click command called ``command``."""
