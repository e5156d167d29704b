"""A design row as a ready scenario (``--write-scenario``) and the empirical error of its
simulated repetitions (``--validate``).

The scenario runs one round of the chosen design with the data the prediction assumed
(simulator.design.predict): uniform (or Zipf) frequencies over d values; for the mean and sum,
inputs uniform over the randomizer's own input domain (the errors it records are on that scale:
multiply them by the design's scale (high - low) / width, written in the file's header); for
balcer, uniform bits. Its utility table then holds the estimator's errors against the empirical
truth, whose expectations the design predicted:

* frequency: mse = mean of the per-repetition ``mse``; l2 = sqrt(mean of ``l2`` squared);
  linf = mean of ``linf``;
* mean, sum: mse = mean of ``mse``; l2 = sqrt(mse); linf = mean of ``mae``.

Confidence intervals: 95% normal intervals for the means over R repetitions (t-free: R >= 20
recommended), mapped through the square root for l2.
"""

from __future__ import annotations

import json
import math

import numpy as np

from shufflesim.simulator.design.predict import scale_of
from shufflesim.simulator.execution.runner import run_scenario
from shufflesim.simulator.scenario.loader import parse_scenario

Z95 = 1.959963984540054
ESTIMATORS = {("frequency", False): "frequency", ("frequency", True): "multi_message_frequency",
              ("mean", False): "mean", ("sum", False): "sum", ("sum", True): "multi_message_sum"}


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def _data(row: dict, randomizer, task: str, domain_size, data) -> str:
    if task == "frequency":
        if data and data.get("distribution") == "zipf":
            return (f'{{ distribution = "zipf", domain_size = {domain_size}, '
                    f'exponent = {float(data["exponent"])!r} }}')
        return f'{{ distribution = "uniform", domain_size = {domain_size} }}'
    if row["kind"] == "multi":
        return '{ distribution = "uniform", domain_size = 2 }'
    domain = randomizer.input_domain
    return (f'{{ distribution = "continuous_uniform", low = {float(domain.low)!r}, '
            f'high = {float(domain.high)!r} }}')


def scenario_text(row: dict, randomizer, task: str, *, domain_size=None, interval=None,
                  data=None, repetitions: int = 100, seed: int = 30, name: str = "design"
                  ) -> str:
    """The TOML text of one design row (module docstring)."""
    multi = row["kind"] == "multi"
    params = json.loads(row["parameters"])
    if multi:
        params["blanket_messages"] = int(row["blanket_messages"])
    scale = 1.0 if task == "frequency" else scale_of(randomizer, interval)
    lines = [
        f"# shufflesim design: {row['randomizer']} {row['parameters']}, rank {row['rank']}",
        f"# lifetime target eps = {row['target_epsilon']:g}, delta = {row['delta']:g} over "
        f"{row['rounds']} round(s); certified by {row['bound']} (eps = {row['epsilon']:.6g})",
        f"# predicted per round: mse = {row['predicted_mse']:.6g}, l2 = "
        f"{row['predicted_l2']:.6g}, linf = {row['predicted_linf']:.6g}",
        f"# error scale: recorded errors x {scale!r} = errors on the design's scale",
        f"name = {json.dumps(name)}",
        f"seed = {int(seed)}",
        f"repetitions = {int(repetitions)}",
        "",
        "[population]",
        f"n = {int(row['n'])}",
        f"data = {_data(row, randomizer, task, domain_size, data)}",
        f"budget = {{ distribution = \"constant\", epsilon0 = {float(row['epsilon0'])!r} }}",
        "",
        "[randomizer]",
        f"name = {json.dumps(row['randomizer'])}",
        *(f"{key} = {_toml_value(value)}" for key, value in params.items()),
        "",
        "[estimator]",
        f"name = {json.dumps(ESTIMATORS[(task, multi)])}",
        "",
        "[batch]",
        f"path = {json.dumps('aggregate' if randomizer.has_aggregate_sampler else 'reports')}",
        "",
    ]
    return "\n".join(lines)


def _interval(values: np.ndarray) -> tuple[float, float, float]:
    mean = float(values.mean())
    half = Z95 * float(values.std(ddof=1)) / math.sqrt(values.size) if values.size > 1 else 0.0
    return mean, mean - half, mean + half


def empirical_errors(utility, task: str, scale: float = 1.0) -> dict:
    """{metric: (estimate, low, high)} from a utility table (module docstring)."""
    frame = utility.to_pandas() if hasattr(utility, "to_pandas") else utility
    frame = frame[frame.reference == "empirical"]

    def column(metric: str) -> np.ndarray:
        return frame[frame.metric == metric].value.to_numpy(dtype=float)

    mse = _interval(column("mse") * scale**2)
    if task == "frequency":
        l2_sq = _interval(column("l2") ** 2)
        linf = _interval(column("linf"))
    else:
        l2_sq, linf = mse, _interval(column("mae") * scale)
    root = tuple(math.sqrt(max(v, 0.0)) for v in l2_sq)
    return {"mse": mse, "l2": root, "linf": linf}


def simulate(text: str, task: str, scale: float = 1.0) -> dict:
    """Run the scenario ``text`` in this process; its :func:`empirical_errors`."""
    tables = run_scenario(parse_scenario(text))
    return empirical_errors(tables["utility"], task, scale)
