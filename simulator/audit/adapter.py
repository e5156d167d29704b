"""The adapter every audit level runs (issue 17; simulator/audit/implementation.py's
docstring): the claimed randomizer's declarations with the user's ``randomize``, offsets
applied and every report checked against the claimed encoding."""

from __future__ import annotations

import numpy as np

from shufflesim.protocols.errors import ParameterError, require
from shufflesim.protocols.randomizers.domains import Categorical
from shufflesim.simulator.audit.claim import Claim
from shufflesim.simulator.audit.loading import FIELD, Implementation, load_implementation


class ImplementationRandomizer:
    """The claimed randomizer's declarations with the user's ``randomize`` (module docstring).

    Attribute access falls through to the claimed randomizer (declared distribution, output
    index, decomposition, bounds' applicability); ``randomize`` calls the implementation,
    applies the offsets and checks every report against the claimed encoding; the aggregate
    sampler is switched off so that nothing bypasses the user's code. A black-box claim has
    only ``name``, ``epsilon0``, ``input_domain`` and ``output_kind``.
    """

    has_aggregate_sampler = False

    def __init__(self, implementation: Implementation, claim: Claim) -> None:
        self.implementation = implementation
        self.claim = claim
        self.declared = claim.randomizer
        self.epsilon0 = float(claim.epsilon0)
        self.name = self.declared.name if self.declared is not None else "black-box"
        self._allowed_entries: np.ndarray | None = None

    def __getattr__(self, attr: str):
        declared = self.__dict__.get("declared")
        if declared is None or attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(declared, attr)

    def __repr__(self) -> str:
        return f"{self.implementation.source} claiming {self.claim.describe()}"

    @property
    def input_domain(self):
        return self.claim.input_domain

    @property
    def output_kind(self) -> str:
        if self.declared is not None:
            return getattr(self.declared, "output_kind", "discrete")
        return "continuous" if self.claim.output == "continuous" else "discrete"

    def sample_aggregate(self, input_counts, rng):
        raise NotImplementedError("an implementation under test is always run report by report")

    def check_values(self, values):
        if self.declared is not None:
            return self.declared.check_values(values)
        return np.asarray(values)

    def randomize(self, values, rng, epsilon=None):
        """The implementation's reports of ``values`` (audit numbering), checked."""
        require(epsilon is None, "epsilon", "per-user", "an implementation under test runs at "
                "its claimed eps0 (no per-user budgets)")
        values = np.asarray(values)
        passed = values + self.claim.input_offset if self.claim.input_offset else values
        reports = self.implementation.call(passed, rng)
        return self.check_reports(reports, values.shape)

    def check_reports(self, reports: np.ndarray, shape: tuple) -> np.ndarray:
        """Reports in the audit's numbering, or a ParameterError naming the first report
        outside the claimed encoding."""
        reports = self._planar(np.asarray(reports), shape)
        if reports.dtype.kind not in "biufc" and (self.output_kind == "continuous"
                                                 or self.claim.scalar_integer_outputs
                                                 or self.declared is not None):
            self._outside(reports.reshape(-1)[:1], f"reports must be numbers, not "
                          f"{reports.dtype} values")
        tail = reports.shape[len(shape):]
        vector_hint = ("; a Gaussian clipped-gradient client is audited through its projection "
                       "(simulator.audit.gradient.audit_gradient, or shufflesim audit "
                       "--gradient-clip), planar points by claiming planar_laplace")
        if self.declared is not None:
            expected = tuple(self.declared.output_shape)
            if tail != expected:
                self._outside(reports.reshape(-1)[:1],
                              f"reports of shape {tail} per input, the claimed "
                              f"{self.declared.name} reports shape {expected}"
                              + (vector_hint if tail and not expected else ""))
        elif tail and self.output_kind == "continuous":
            self._outside(reports.reshape(-1)[:1],
                          f"reports of shape {tail} per input: a black-box continuous claim "
                          f"audits one number per report{vector_hint}")
        if self.output_kind == "continuous":
            bad = ~np.isfinite(reports)
            if bad.any():
                self._outside(reports[bad][:1], "reports must be finite numbers")
            return reports
        if self.claim.scalar_integer_outputs:
            if not (np.issubdtype(reports.dtype, np.integer) or reports.dtype == bool):
                as_int = np.rint(reports.astype(float))
                bad = as_int != reports
                if bad.any():
                    self._outside(reports[bad][:1], "reports must be integers")
                reports = as_int.astype(np.int64)
            reports = reports.astype(np.int64) - self.claim.report_offset
            size = self.declared.output_size if self.declared is not None else None
            low_ok = reports >= 0
            bad = ~low_ok if size is None else ~(low_ok & (reports < size))
            if bad.any():
                shown = reports[bad][:1] + self.claim.report_offset
                encoding = (f"[{self.claim.report_offset}, {self.claim.report_offset + size})"
                            if size is not None else f">= {self.claim.report_offset}")
                # one past the top, and only there: a client numbering items from 1
                one_based = (size is not None and self.claim.input_offset == 0
                             and int(reports[bad].max()) == size and not (~low_ok).any())
                self._outside(shown, f"outside the claimed encoding {encoding}",
                              hint=one_based)
            return reports
        if self.declared is not None:
            allowed = self._allowed()
            if allowed is not None and reports.size:
                bad = ~np.isin(reports, allowed)
                if bad.any():
                    self._outside(reports[bad][:1], f"an entry the claimed "
                                  f"{self.declared.name} never emits (its entries: "
                                  f"{allowed.tolist()})")
        return reports

    def _planar(self, reports: np.ndarray, shape: tuple) -> np.ndarray:
        """Planar reports: complex ones pass when the claim reports complex points
        (planar_laplace), and so do real ones with a last axis of 2 (read as x + iy); complex
        reports for any other claim are refused in one line saying why and what to do."""
        declared_complex = (self.declared is not None and np.dtype(
            getattr(self.declared, "report_dtype", None) or np.float64).kind == "c")
        if declared_complex:
            if reports.dtype.kind in "biuf" and reports.shape == tuple(shape) + (2,):
                return reports[..., 0].astype(float) + 1j * reports[..., 1].astype(float)
            return reports
        if reports.dtype.kind == "c":
            claim = (f"the claimed {self.declared.name}" if self.declared is not None
                     else "a black-box claim")
            self._outside(reports.reshape(-1)[:1], f"complex reports (planar points), but "
                          f"{claim} reports real numbers: claim a planar randomizer "
                          "(planar_laplace: audited at the randomizer level, and at the shuffle "
                          "level by its likelihood ratio)")
        return reports

    def _allowed(self) -> np.ndarray | None:
        """Entries of the declared randomizer's vector reports (from a pilot of its own
        sampler), when there are few of them (e.g. {0, 1})."""
        if self._allowed_entries is None:
            d = self.declared
            domain = d.input_domain
            x = (np.arange(min(domain.size, 64)) if isinstance(domain, Categorical)
                 else np.linspace(domain.low, domain.high, 16))
            pilot = np.asarray(d.randomize(np.repeat(x, 16), np.random.default_rng(0)))
            entries = np.unique(pilot)
            self._allowed_entries = entries if entries.size <= 16 else np.zeros(0)
        return self._allowed_entries if self._allowed_entries.size else None

    def _outside(self, example, reason: str, hint: bool = False) -> None:
        value = np.asarray(example).reshape(-1)
        shown = value[0].item() if value.size else None
        hint = "; a client numbering items from 1 needs input_offset = 1" if hint else ""
        raise ParameterError(FIELD, self.implementation.source,
                             f"returned report {shown!r}: {reason}{hint}")


def implementation_randomizer(implementation, claim: Claim, *, vectorized: bool | None = None
                              ) -> ImplementationRandomizer:
    """The adapter for ``implementation`` (anything :func:`load_implementation` takes)."""
    return ImplementationRandomizer(load_implementation(implementation, vectorized=vectorized),
                                    claim)
