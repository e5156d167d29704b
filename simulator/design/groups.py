"""Personalized budget groups in a design: groups of users with their own lifetime targets.

A group g holds a fraction f_g of the n users and asks for its own lifetime (eps_g, delta) over
the T rounds. The design shuffles each group separately (one shuffler, or one batch, per group
and round): a user's privacy then depends only on the n_g = floor(f_g n) users of its group,
so each group is certified exactly as a design of its own (simulator.design.runner, proven
bounds composed over T rounds). The proven personalized bounds for a joint shuffle
(optimal-blanket-personalized, 000/003) hold for one round and do not compose over rounds, so
they are not used here; separate shuffles give up the amplification the groups could lend one
another, never soundness.

Every candidate that meets every group's target gets one row per group (its certified eps0 or
blanket messages for that group) and the error of the combined estimate, ranked by it:
the n_g-weighted average of the groups' unbiased estimates (frequency, mean) or their sum (sum),
whose variance is sum_g (n_g / n)^2 Var_g (or sum_g Var_g): exact for mse and l2; linf by the
same normal approximation as one group, with the groups' per-value standard deviations combined
in quadrature (sqrt(sum_g w_g^2 linf_g^2), exact when the groups' profiles are proportional, as
for uniform data).

Groups come as (fraction, eps) pairs, 003's group presets (``gspa-three-groups``: 0.54 / 0.37 /
0.09 at 0.1 / 0.5 / 1.0; ``gspa-mixed``), or a CSV file with columns ``fraction,epsilon``.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pandas as pd

from shufflesim.protocols.errors import ParameterError, require
from shufflesim.simulator.design.predict import METRICS
from shufflesim.simulator.design.runner import FIELDS, design
from shufflesim.simulator.population.budgets import PRESETS


def resolve_groups(groups) -> list[tuple[float, float]]:
    """(fraction, lifetime eps) per group from pairs, a preset name or a CSV file."""
    if isinstance(groups, str):
        preset = PRESETS.get(groups)
        if preset is not None:
            fractions = getattr(preset, "group_fractions", None)
            if fractions is None and hasattr(preset, "fractions"):
                fractions = (preset.fractions, preset.epsilons)
            elif fractions is None and hasattr(preset, "conservative_fraction"):
                c, li = preset.conservative_fraction, preset.liberal_fraction
                fractions = ((c, 1 - c - li, li), (preset.conservative_epsilon,
                                                   preset.moderate_epsilon,
                                                   preset.liberal_epsilon))
            require(fractions is not None, "groups", groups,
                    "is not a group preset (003's gspa-three-groups or gspa-mixed)")
            return [(float(f), float(e)) for f, e in zip(*fractions, strict=True)]
        path = Path(groups)
        require(path.is_file(), "groups", groups, f"is neither a group preset "
                f"({sorted(k for k in PRESETS if 'group' in k or 'mixed' in k)}) nor a file")
        with path.open(newline="") as stream:
            rows = list(csv.DictReader(stream))
        require(bool(rows) and {"fraction", "epsilon"} <= set(rows[0]), "groups", groups,
                "needs a CSV header with the columns fraction,epsilon")
        try:
            groups = [(float(r["fraction"]), float(r["epsilon"])) for r in rows]
        except ValueError:
            raise ParameterError("groups", groups, "fraction and epsilon must be numbers"
                                 ) from None
    pairs = [(float(f), float(e)) for f, e in groups]
    require(len(pairs) >= 1, "groups", pairs, "needs at least one group")
    for f, e in pairs:
        require(0 < f <= 1 and 0 < e < math.inf, "groups", (f, e),
                "each group needs a fraction in (0, 1] and a lifetime eps > 0")
    require(abs(sum(f for f, _ in pairs) - 1) < 1e-6, "groups", pairs,
            "the fractions must sum to 1")
    return pairs


def design_groups(task: str, n: int, groups, delta: float, rounds: int = 1, **options
                  ) -> pd.DataFrame:
    """The design table of :func:`~simulator.design.runner.design` for budget groups (module
    docstring): one row per candidate and group (``group`` names it, ``n`` is its users);
    ``predicted_*`` is the combined estimate's error, ``rank`` ranks the candidates by it."""
    require(not options.get("validate"), "validate", options.get("validate"),
            "is not available with budget groups (each group is shuffled on its own)")
    require(isinstance(n, int) and n >= 2, "n", n, "must be one integer >= 2 with groups")
    metric = options.get("metric", "l2")
    pairs = resolve_groups(groups)
    frames = []
    for index, (fraction, target) in enumerate(pairs):
        size = int(math.floor(fraction * n))
        require(size >= 2, "groups", (fraction, target), f"holds {size} of the {n} users")
        try:
            frame = design(task, size, target, delta, rounds, **options)
        except ParameterError as error:
            raise ParameterError("groups", (fraction, target),
                                 f"group {index + 1}: {error.requirement}") from None
        frame = frame[frame.meets_target.astype(bool)].copy()
        frame["group"] = f"{index + 1}: {fraction:g} of the users, eps {target:g}"
        frame["weight"] = size / n if task != "sum" else 1.0
        frames.append(frame)
    key = ["randomizer", "parameters"]
    common = set.intersection(*(set(map(tuple, f[key].to_numpy())) for f in frames))
    require(bool(common), "groups", pairs, "no candidate meets every group's target")
    every = pd.concat(frames, ignore_index=True)
    every = every[every[key].apply(tuple, axis=1).isin(common)]
    for m in METRICS:
        column = f"predicted_{m}"
        squared = (every.weight * (every[column] if m == "mse" else every[column] ** 2)
                   * every.weight)
        combined = squared.groupby([every.randomizer, every.parameters]).transform("sum")
        every[column] = combined if m == "mse" else combined.pow(0.5)
    order = (every.groupby(key)[f"predicted_{metric}"].first().sort_values(kind="stable"))
    ranks = {k: i + 1 for i, k in enumerate(order.index)}
    every["rank"] = [ranks[(r, p)] for r, p in zip(every.randomizer, every.parameters,
                                                     strict=True)]
    every = every.sort_values(["rank", "group"], kind="stable").reset_index(drop=True)
    every["parameters"] = [json.dumps(json.loads(p), sort_keys=True) for p in every.parameters]
    return every[list(FIELDS)]
