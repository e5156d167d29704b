"""Per-user lifetime accounting of pipeline runs with rounds (issue 16): ``users.parquet``.

With rounds, dropouts and batches of varying size, each user's lifetime (eps, delta) comes from
the batches that user was actually in. In round t a user is in at most one released batch (a
user who dropped out, or whose batch was dropped by thresholding, is in none); a released batch
with h honest messages gives that round the pair of h users shuffled together (the colluders'
messages are known to the analyzer and protect nobody). The user's rounds are composed with
protocols.accounting: ``compose_rounds([Round(randomizer, h_1), Round(randomizer, h_2), ...],
delta, method)``.

Method: the best proven composed upper bound available for the randomizer: ``optimal-blanket``
(000 Thm 13 blanket pair) for brr and krr, else ``fmt21-clone`` (002 Thm 3.2 clone pair, any
eps0-LDP randomizer), at the pipeline's central delta (``pipeline.delta``, else the smallest
``[bounds]`` delta, as the per-batch epsilon of batches.parquet). Upper bounds are capped at
k x eps0 for a user in k batches (each round is eps0-DP, pure DP composes additively).

Sharing compositions. Each user's batch sizes are rounded *down* to a grid of honest sizes
(exact up to ``base``, then ``steps`` sizes per doubling: at most 4.4% fewer users at 16 per
doubling). This is the conservative direction: a round with one more honest user is a
post-processing of the smaller round (add an independent report, shuffle), and the blanket
and clone pairs are dominated by their counterparts with fewer users, so the composed upper
bound with fewer users is never smaller. The composition of a multiset of rounds does not depend
on their order, so a user's *signature* is the vector of counts per grid size (np.unique over
the users' count vectors groups them, no per-user Python loop) and every signature is composed
once (cached across repetitions in the process). When a repetition has more than
``MAX_SIGNATURES`` signatures the grid is coarsened (8, 4, 2, 1 sizes per doubling, smaller
exact range), again only rounding down.

Rounds in a batch of one honest message (no other user to hide among) count as pure eps0 rounds:
the user's eps is the composed value of the other rounds plus eps0 per such round (basic
composition of an (eps, delta) and an (eps0, 0) guarantee). Without a central delta, or for
multi-message randomizers (a user's m messages may fall in different batches), a user's eps is
k x eps0 at delta 0 (pure DP), ``method = "local"``. A composition that fails (e.g. eps0 > 50 for
the clone pair) falls back to k x eps0 with the reason in ``note``.

Per-user budgets: every user is accounted at the run's largest budget (the assumption of the
per-batch epsilon: bounds are non-decreasing in every user's budget).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shufflesim.protocols.accounting import compose as accounting
from shufflesim.protocols.accounting.pairs import SUPPORTED
from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator.results.records import Record

TABLE = "users"

#: users.parquet: one row per user of every repetition of every point run with rounds > 1.
@dataclass(frozen=True)
class UserRow(Record):
    """One row of users.parquet: one user of one repetition of one point (docs/results.md)."""

    point: Annotated[int, pa.int32()]
    overrides: str
    repetition: Annotated[int, pa.int32()]
    user: int
    colluding: bool
    rounds: Annotated[int, pa.int32()]
    smallest_batch: int
    epsilon: float | None
    delta: float
    method: str
    note: str


USERS_SCHEMA = UserRow.schema()

#: Above this many distinct signatures in one repetition the size grid is coarsened.
MAX_SIGNATURES = 400
#: Grids tried in order: (sizes kept exactly up to ``base``, sizes per doubling above it).
GRIDS = ((64, 16), (64, 8), (16, 4), (4, 2), (2, 1))
COLLUDING_NOTE = "colluding client: the analyzer knows its reports (no privacy to account)"
ABSENT_NOTE = "in no released batch: nothing about this user was released"


def grid_sizes(sizes: np.ndarray, base: int = 64, steps: int = 16) -> np.ndarray:
    """Each size rounded down to the grid: itself up to ``base``, else the largest
    floor(base 2^(j / steps)) <= size (``simulator.pipeline.unit.grid_size`` is its per-batch
    case).
    Rounding down is conservative for upper bounds (module docstring)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    out = sizes.copy()
    big = sizes > base
    if not big.any():
        return out
    h = sizes[big].astype(np.float64)
    step = np.floor(steps * np.log2(h / base) + 1e-9)
    grid = np.floor(base * 2.0 ** (step / steps) + 1e-9)
    while (over := grid > h).any():  # floating-point edge: one step down
        step[over] -= 1
        grid[over] = np.floor(base * 2.0 ** (step[over] / steps) + 1e-9)
    out[big] = np.maximum(grid.astype(np.int64), base)
    return out


def lifetime_method(randomizer) -> str:
    """The best proven composed upper bound for the randomizer (module docstring)."""
    return "optimal-blanket" if getattr(randomizer, "name", "") in SUPPORTED else "fmt21-clone"


#: (randomizer repr, delta, method, signature) -> (epsilon, note) of the composed part.
_COMPOSED: dict[tuple, tuple[float, str]] = {}
_COMPOSED_LIMIT = 200_000


def composed_epsilon(randomizer, signature: tuple[tuple[int, int], ...], delta: float,
                     method: str) -> tuple[float | None, str]:
    """(eps, "") of the rounds ``signature`` = ((honest size >= 2, count), ...) composed with
    ``method`` at ``delta``, or (None, why) when the method gives no value. Cached."""
    if not signature:
        return 0.0, ""
    key = (repr(randomizer), float(delta), method, signature)
    if key not in _COMPOSED:
        if len(_COMPOSED) > _COMPOSED_LIMIT:
            _COMPOSED.clear()
        try:
            result = accounting.compose_rounds(
                [accounting.Round(randomizer, int(size), int(count))
                 for size, count in signature], float(delta), method)
            _COMPOSED[key] = (float(result.epsilon), "")
        except ParameterError as error:
            _COMPOSED[key] = (None, str(error))
    return _COMPOSED[key]


def _signatures(member_sizes: np.ndarray, base: int, steps: int):
    """(grid values, counts per user and grid value, unique count vectors, inverse)."""
    sized = member_sizes >= 2
    grid = grid_sizes(np.where(sized, member_sizes, 0), base, steps)
    values = np.unique(grid[sized])
    users = member_sizes.shape[1]
    index = np.searchsorted(values, grid)  # valid where sized
    flat = (np.nonzero(sized)[1] * values.size + index[sized]) if values.size else \
        np.zeros(0, dtype=np.int64)
    counts = np.bincount(flat, minlength=users * values.size).reshape(users, values.size)
    ones = (member_sizes == 1).sum(axis=0)
    table = np.ascontiguousarray(np.concatenate([counts, ones[:, None]], axis=1),
                                 dtype=np.int32)
    # rows as opaque byte strings: np.unique on one column instead of a lexicographic sort
    rows = table.view(np.dtype((np.void, 4 * table.shape[1]))).reshape(-1)
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    return values, table[first], inverse.reshape(-1)


def lifetime_columns(member_sizes: np.ndarray, colluding: np.ndarray, randomizer,
                     epsilon0: float, delta: float | None, *, multi_message: bool = False
                     ) -> dict[str, np.ndarray | pa.Array]:
    """Per-user columns ``user, colluding, rounds, smallest_batch, epsilon, delta, method,
    note`` for one repetition; ``member_sizes`` (rounds, n): the honest size of the released
    batch that held each user's message in each round, 0 for none (run_pipeline with
    ``track_clients``). See the module docstring for the method and its conservative steps."""
    member_sizes = np.asarray(member_sizes, dtype=np.int64)
    users = member_sizes.shape[1]
    colluding = np.asarray(colluding, dtype=bool)
    member_sizes = np.where(colluding[None, :], 0, member_sizes)
    rounds = (member_sizes > 0).sum(axis=0).astype(np.int32)
    smallest = np.where(member_sizes > 0, member_sizes, np.iinfo(np.int64).max).min(axis=0)
    smallest = np.where(rounds > 0, smallest, 0)
    pure_cap = rounds * float(epsilon0)
    if delta is None or multi_message:
        why = ("no central delta (set pipeline.delta, or a [bounds] section): k x eps0, pure DP"
               if delta is None else "multi-message randomizer: k x its LDP level log p "
               "(local_epsilon), pure DP")
        epsilon = pure_cap.astype(np.float64)
        methods = _strings(np.zeros(users, dtype=np.int32), ["local"])
        notes = np.where(rounds > 0, 0, 1).astype(np.int32)
        return _finish(users, colluding, rounds, smallest, epsilon,
                       0.0 if delta is None else float(delta), methods,
                       _strings(notes, [why, ABSENT_NOTE]))
    method = lifetime_method(randomizer)
    for base, steps in GRIDS:
        values, unique, inverse = _signatures(member_sizes, base, steps)
        if unique.shape[0] <= MAX_SIGNATURES:
            break
    grid_note = f"honest sizes rounded down to {steps} per doubling above {base}"
    sig_eps = np.empty(unique.shape[0])
    sig_method = np.zeros(unique.shape[0], dtype=np.int32)  # 0: method, 1: local fallback
    sig_notes: list[str] = []
    for j, row in enumerate(unique):  # one composition per signature, not per user
        signature = tuple((int(values[g]), int(row[g])) for g in np.flatnonzero(row[:-1]))
        k = sum(c for _, c in signature) + int(row[-1])
        eps, why = composed_epsilon(randomizer, signature, delta, method)
        if k == 0:
            sig_eps[j], note = 0.0, ABSENT_NOTE
        elif eps is None:
            sig_eps[j], sig_method[j] = k * float(epsilon0), 1
            note = f"{method} gives no value ({why}): k x eps0, pure DP"
        else:
            sig_eps[j] = min(eps + int(row[-1]) * float(epsilon0), k * float(epsilon0))
            note = f"{method} over {k - int(row[-1])} rounds, {grid_note}" if signature else ""
            if row[-1]:
                note += ("; " if note else "") + (f"{int(row[-1])} round(s) in a batch of one "
                                                  "honest message at eps0")
        sig_notes.append(note)
    epsilon = np.minimum(sig_eps[inverse], pure_cap)
    methods = _strings(sig_method[inverse], [method, "local"])
    notes = _strings(inverse.astype(np.int32), sig_notes)
    return _finish(users, colluding, rounds, smallest, epsilon, float(delta), methods, notes)


def _strings(indices: np.ndarray, dictionary: list[str]) -> pa.Array:
    """A string column from per-row indices into ``dictionary`` (no per-row Python work)."""
    return pa.DictionaryArray.from_arrays(pa.array(indices, type=pa.int32()),
                                          pa.array(dictionary, type=pa.string())
                                          ).cast(pa.string())


def _finish(users, colluding, rounds, smallest, epsilon, delta, methods, notes) -> dict:
    if colluding.any():  # colluders: no eps (null), the reason in the note
        notes = pc.if_else(pa.array(colluding), COLLUDING_NOTE, notes)
    return {"user": np.arange(users, dtype=np.int64), "colluding": colluding,
            "rounds": rounds, "smallest_batch": smallest.astype(np.int64),
            "epsilon": pa.array(epsilon, type=pa.float64(), mask=colluding),
            "delta": np.full(users, delta, dtype=np.float64), "method": methods, "note": notes}


def users_table(point: int, overrides: str, repetition: int, columns: dict) -> pa.Table:
    """One repetition's users.parquet rows."""
    users = len(columns["user"])
    head = {"point": np.full(users, point, dtype=np.int32),
            "overrides": _strings(np.zeros(users, dtype=np.int32), [overrides]),
            "repetition": np.full(users, repetition, dtype=np.int32)}
    return UserRow.from_columns({**head, **columns})


def summary(epsilon) -> dict[str, float]:
    """Quantiles and mean of the finite lifetime eps values (reports, benchmarks)."""
    values = np.asarray(epsilon, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return {}
    qs = (0.0, 0.1, 0.5, 0.9, 0.99, 1.0)
    out = {f"q{round(q * 100)}": float(v) for q, v in zip(qs, np.quantile(values, qs),
                                                            strict=True)}
    out["mean"] = float(values.mean())
    return out
