"""A probe of the engine shared by tests: how often the conditioning method refines into
blocks (tests/test_blocks_worth.py, tests/test_polish_costly.py)."""

import shufflesim.protocols.bounds.engine.methods as methods


def count_block_refinements(monkeypatch) -> list[int]:
    """The n_blocks of every conditioning evaluation, appended as they happen."""
    calls = []
    original = methods.conditioning_bounds

    def counting(cat, values, probs, value_err, n_blocks):
        calls.append(n_blocks)
        return original(cat, values, probs, value_err, n_blocks)

    monkeypatch.setattr(methods, "conditioning_bounds", counting)
    return calls
