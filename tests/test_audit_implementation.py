"""Auditing a user's own implementation (issue 17; simulator/audit/implementation.py): loading,
the claim, every level running the user's code, planted faults caught, correct clients
"consistent", the three entry points giving the same rows, one-line errors.

The clients below are small in-test implementations written the way a user would (they are
not the project's randomizers): k-RR over {0, ..., k-1} and OUE, correct or with a planted
fault (eps0 misdeclared 1.3x, an off-by-one in the value range, a shuffler that does not
permute)."""

from __future__ import annotations

import json
import random
import textwrap
import warnings

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import constant_budget, scenario_text, uniform
from scipy import stats

from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator.audit.implementation import (
    Claim,
    CoordinateEvents,
    HashedEvents,
    implementation_randomizer,
    load_implementation,
    report_hash,
    shuffler_permutation,
)
from shufflesim.simulator.audit.randomizer_level import RandomizerAuditOptions, audit_randomizer
from shufflesim.simulator.audit.run import audit_implementation
from shufflesim.simulator.audit.shuffle_level import AuditOptions, audit_shuffle
from shufflesim.simulator.audit.verdicts import (
    SUBJECT_BOUND,
    SUBJECT_IMPLEMENTATION,
    Verdict,
    shuffled_verdict,
    verdict_subject,
)
from shufflesim.simulator.cli import main
from shufflesim.simulator.execution.runner import run_scenario
from shufflesim.simulator.scenario.loader import load_scenario

K, EPS0 = 4, 2.0


# ------------------------------------------------------------------------------------------
# In-test clients
# ------------------------------------------------------------------------------------------
def krr(values, rng, eps=EPS0, k=K):
    """Correct k-RR: the truth w.p. e^eps / (e^eps + k - 1), else one of the k - 1 others."""
    p = np.exp(eps) / (np.exp(eps) + k - 1)
    keep = rng.random(values.shape) < p
    other = (values + rng.integers(1, k, size=values.shape)) % k
    return np.where(keep, values, other)


def krr_13(values, rng):
    """Planted fault: runs with 1.3 eps0 while claiming eps0."""
    return krr(values, rng, eps=1.3 * EPS0)


def krr_off_by_one(values, rng, eps=EPS0, k=K):
    """Planted fault: an off-by-one range check (``x < k - 1`` instead of ``x < k``) reports
    the last value truthfully."""
    p = np.exp(eps) / (np.exp(eps) + k - 1)
    keep = (rng.random(values.shape) < p) | (values >= k - 1)
    other = (values + rng.integers(1, k, size=values.shape)) % k
    return np.where(keep, values, other)


def krr_from_one(values, rng):
    """Correct k-RR of a client that numbers items 1..k."""
    return krr(values - 1, rng) + 1


def krr_one_value(value, rng):
    """Correct k-RR written one value at a time (not vectorized)."""
    p = np.exp(EPS0) / (np.exp(EPS0) + K - 1)
    if rng.random() < p:
        return value
    return (value + int(rng.integers(1, K))) % K


def krr_global(values, rng):
    """Correct k-RR drawing from numpy's legacy global state, not from ``rng``."""
    return krr(values, np.random.default_rng(np.random.randint(2**31)))  # noqa: NPY002


def oue(values, rng, eps=1.0, d=64):
    """Optimized unary encoding over d values: bit x w.p. 1/2, others w.p. 1 / (e^eps + 1)."""
    q = 1.0 / (np.exp(eps) + 1.0)
    out = rng.random(values.shape + (d,)) < q
    own = rng.random(values.shape) < 0.5
    np.put_along_axis(out, values[..., None], own[..., None], axis=-1)
    return out.astype(np.int64)


def oue_13(values, rng):
    return oue(values, rng, eps=1.3)


def permute(messages, rng):
    return messages[rng.permutation(len(messages))]


CLIENT_FILE = textwrap.dedent('''
    import numpy as np

    def krr(values, rng, eps=2.0, k=4):
        p = np.exp(eps) / (np.exp(eps) + k - 1)
        keep = rng.random(values.shape) < p
        other = (values + rng.integers(1, k, size=values.shape)) % k
        return np.where(keep, values, other)

    def krr_13(values, rng):
        return krr(values, rng, eps=2.6)

    def no_shuffle(messages, rng):
        return messages

    def permute(messages, rng):
        return messages[rng.permutation(len(messages))]

    not_a_function = 3
''')


@pytest.fixture
def client_file(tmp_path):
    path = tmp_path / "client.py"
    path.write_text(CLIENT_FILE)
    return path


def claim(**kw):
    return Claim.registered("krr", epsilon0=EPS0, domain_size=K, **kw)


def verdicts(rows):
    return {r["bound"]: r for r in rows if r["row_type"] == "verdict"}


# ------------------------------------------------------------------------------------------
# Loading, claims, encodings
# ------------------------------------------------------------------------------------------
def test_load_from_file_and_module(client_file):
    impl = load_implementation(f"{client_file}:krr")
    assert impl.source == f"{client_file}:krr"
    out = impl.call(np.arange(K).repeat(5), np.random.default_rng(0))
    assert out.shape == (20,) and set(np.unique(out)) <= set(range(K))
    mod = load_implementation("numpy.random:default_rng")
    assert callable(mod.function)


@pytest.mark.parametrize("spec, words", [
    ("{dir}/missing.py:krr", "no such file"),
    ("{file}:nothing", "has no function 'nothing'"),
    ("{file}:not_a_function", "is not callable"),
    ("no_such_module_xyz:f", "no module"),
    ("just-a-name", "expected path/to/file.py:function"),
])
def test_bad_implementation_is_a_parameter_error(client_file, spec, words):
    spec = spec.format(dir=client_file.parent, file=client_file)
    with pytest.raises(ParameterError, match=words) as info:
        load_implementation(spec)
    assert info.value.field == "implementation"


@pytest.mark.parametrize("suffix, words", [("missing.py:krr", "no such file"),
                                           ("client.py:nothing", "has no function")])
def test_cli_bad_implementation_one_line_exit_2(client_file, suffix, words):
    result = CliRunner().invoke(main, [
        "audit", "--implementation", str(client_file.parent / suffix), "--randomizer", "krr",
        "--domain-size", "4", "--epsilon0", "2", "--trials", "1000", "--level", "randomizer"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "--implementation" in lines[0] and words in lines[0]


def test_client_numbering_from_one_needs_the_offset():
    tested = implementation_randomizer(krr_from_one, claim())
    with pytest.raises(ParameterError, match="outside the claimed encoding.*input_offset = 1"):
        tested.randomize(np.arange(K).repeat(50), np.random.default_rng(0))
    rows = audit_implementation(krr_from_one, claim(input_offset=1), trials=40_000, seed=2)
    assert verdicts(rows)["implementation-ldp"]["verdict"] == "consistent"
    assert verdicts(rows)["implementation-fit"]["verdict"] == "consistent"


def test_wrong_report_shape_is_named():
    tested = implementation_randomizer(lambda v, rng: np.zeros((v.size, 2), dtype=int), claim())
    with pytest.raises(ParameterError, match="shape"):
        tested.randomize(np.arange(K), np.random.default_rng(0))


def test_non_vectorized_client_warns_and_is_audited():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = audit_implementation(krr_one_value, claim(), trials=5_000, seed=1)
    assert any("not vectorized" in str(w.message) for w in caught)
    assert verdicts(rows)["implementation-ldp"]["verdict"] == "consistent"
    explicit = audit_implementation(krr_one_value, claim(), trials=5_000, seed=1,
                                    vectorized=False)
    key = [(r["pair"], r["count0"], r["count1"]) for r in rows if r["row_type"] == "attack"]
    assert key == [(r["pair"], r["count0"], r["count1"]) for r in explicit
                   if r["row_type"] == "attack"]


def test_global_random_state_is_seeded_reproducibly():
    def counts(seed):
        rows = audit_implementation(krr_global, claim(), trials=5_000, seed=seed)
        return [(r["count0"], r["count1"]) for r in rows if r["row_type"] == "attack"]

    random.seed(123)
    np.random.seed(99)  # noqa: NPY002 (whatever state the caller left: seeded over)
    first = counts(4)
    np.random.seed(7)  # noqa: NPY002
    assert counts(4) == first
    assert counts(5) != first


def test_shuffler_must_permute_what_it_is_given():
    perm = shuffler_permutation(lambda m, rng: m[:-1])
    with pytest.raises(ParameterError, match="permutation"):
        perm(np.random.default_rng(0), 5)
    ok = shuffler_permutation(permute)(np.random.default_rng(0), 7)
    assert sorted(ok.tolist()) == list(range(7))


def test_event_functions():
    reports = np.array([[1, 0, 1, 0], [0, 1, 1, 1], [1, 0, 1, 0]])
    events = CoordinateEvents((0, 2, 3))
    assert events.size == 8 and events(reports).tolist() == [3, 6, 3]
    hashed = HashedEvents(16)
    h = hashed(reports)
    assert h[0] == h[2] and 0 <= h.min() and h.max() < 16
    assert report_hash(reports)[0] != report_hash(reports)[1]


# ------------------------------------------------------------------------------------------
# Randomizer level
# ------------------------------------------------------------------------------------------
def test_randomizer_level_correct_client_is_consistent():
    rows = audit_implementation(krr, claim(), trials=100_000, seed=0)
    v = verdicts(rows)
    assert v["implementation-ldp"]["verdict"] == "consistent"
    assert v["implementation-fit"]["verdict"] == "consistent"
    assert v["implementation-ldp"]["subject"] == SUBJECT_IMPLEMENTATION
    assert 0.8 * EPS0 < v["implementation-ldp"]["epsilon_lb"] <= EPS0
    assert all(r["implementation"].endswith(":krr") for r in rows)


@pytest.mark.parametrize("client", [krr_13, krr_off_by_one], ids=["x1.3", "off-by-one"])
def test_randomizer_level_catches_planted_faults(client):
    rows = audit_implementation(client, claim(), trials=100_000, seed=0)
    v = verdicts(rows)
    ldp = v["implementation-ldp"]
    assert ldp["verdict"] == "violated" and ldp["epsilon_lb"] > EPS0
    assert ldp["reason"].startswith("the implementation is not 2-LDP: lower bound ")
    assert "at confidence 0.95 on inputs (" in ldp["reason"] and "event" in ldp["reason"]
    assert v["implementation-fit"]["verdict"] == "violated"
    if client is krr_off_by_one:
        assert "3" in ldp["reason"].split("on inputs (")[1].split(")")[0]  # the faulty value
    else:
        assert ldp["epsilon_lb"] <= 1.3 * EPS0


def test_no_false_not_ldp_verdict_over_60_seeds():
    """Correct client, confidence 0.9: a false "not eps0-LDP" has probability <= 0.1 per seed;
    over 60 seeds the count stays below the binomial(60, 0.1) 1e-4 quantile."""
    false = 0
    for seed in range(60):
        rows = audit_implementation(krr, claim(), trials=20_000, seed=seed, confidence=0.9)
        false += verdicts(rows)["implementation-ldp"]["verdict"] == "violated"
    assert false <= stats.binom.ppf(1 - 1e-4, 60, 0.1)


def test_unary_encoding_over_64_values_uses_coordinate_events():
    c = Claim.registered("oue", epsilon0=1.0, domain_size=64)
    ok = audit_implementation(oue, c, trials=60_000, seed=3)
    bad = audit_implementation(oue_13, c, trials=60_000, seed=3)
    assert verdicts(ok)["implementation-ldp"]["verdict"] == "consistent"
    assert verdicts(ok)["implementation-fit"]["verdict"] == "consistent"
    assert verdicts(bad)["implementation-ldp"]["verdict"] == "violated"
    assert "bits of coordinates" in verdicts(bad)["implementation-ldp"]["reason"]


def test_black_box_claims_only_eps0():
    c = Claim(epsilon0=EPS0, domain_size=K)
    ok = verdicts(audit_implementation(krr, c, trials=60_000, seed=1))
    bad = verdicts(audit_implementation(krr_13, c, trials=60_000, seed=1))
    assert ok["implementation-ldp"]["verdict"] == "consistent"
    assert ok["implementation-fit"]["verdict"] == "not-evaluated"
    assert bad["implementation-ldp"]["verdict"] == "violated"
    with pytest.raises(ParameterError, match="randomizer level only"):
        audit_implementation(krr, c, trials=1000, level="shuffle", n=10, delta=1e-3)


def test_black_box_approximate_claim_subtracts_delta0():
    """Claiming (eps0, delta0) with delta0 = 0.5 makes the 1.3x client consistent: the bound
    is ln((P_lo - delta0) / P_hi) <= ln((0.81 - 0.5) / 0.063) = 1.6 < 2."""
    c = Claim(epsilon0=EPS0, delta0=0.5, domain_size=K)
    rows = audit_implementation(krr_13, c, trials=60_000, seed=1)
    ldp = verdicts(rows)["implementation-ldp"]
    assert ldp["verdict"] == "consistent" and "(2, 0.5)-LDP" in ldp["reason"]


def test_event_function_given_explicitly():
    tested = implementation_randomizer(oue_13, Claim.registered("oue", epsilon0=1.0,
                                                                 domain_size=64))
    audit = audit_randomizer(tested, RandomizerAuditOptions(40_000), 0, inputs=[5, 9],
                             events=CoordinateEvents((5, 9)))
    assert audit.ldp_violated and audit.events == "bits of coordinates [5, 9]"


# ------------------------------------------------------------------------------------------
# Shuffle and pipeline levels
# ------------------------------------------------------------------------------------------
def _shuffle(client, **kw):
    return verdicts(audit_implementation(client, claim(), trials=kw.pop("trials", 40_000),
                                         level="shuffle", n=20, delta=1e-3, seed=5,
                                         bounds=("optimal-blanket",), **kw))


def test_shuffle_level_runs_the_code():
    ok = _shuffle(krr)
    assert ok["implementation-fit"]["verdict"] == "consistent"
    assert ok["implementation-shuffled"]["verdict"] == "consistent"
    # x1.3 at the worst-case triple: the attack bound exceeds the proven upper bound
    bad = _shuffle(krr_13, x0=0, x1=1, x2=1)
    assert bad["implementation-shuffled"]["verdict"] == "violated"
    assert bad["implementation-shuffled"]["reason"].startswith(
        "the implementation's shuffled output is not that of the claimed krr")
    assert bad["optimal-blanket"]["subject"] == SUBJECT_IMPLEMENTATION
    assert bad["implementation-fit"]["verdict"] == "violated"
    # the off-by-one value is held by the others (uniform over the domain by default)
    assert _shuffle(krr_off_by_one)["implementation-fit"]["verdict"] == "violated"


def test_shuffle_level_two_stage():
    assert _shuffle(krr, two_stage=True)["implementation-fit"]["verdict"] == "consistent"
    bad = _shuffle(krr_13, two_stage=True)
    assert bad["implementation-fit"]["verdict"] == "violated"


def _pipeline(client, **kw):
    return audit_implementation(client, claim(), trials=1_000, level="pipeline", n=60,
                                delta=1e-3, seed=6, bounds=("optimal-blanket",), **kw)


def test_pipeline_level_covers_the_domain_and_catches_off_by_one():
    rows = _pipeline(krr)
    assert verdicts(rows)["implementation-fit"]["verdict"] == "consistent"
    assert verdicts(rows)["implementation-shuffled"]["verdict"] == "consistent"
    assert "others hold (x2 + i) mod 4" in rows[0]["pair"]
    assert verdicts(_pipeline(krr_off_by_one))["implementation-fit"]["verdict"] == "violated"


def test_pipeline_level_user_shuffler(client_file):
    ok = verdicts(_pipeline(krr, attacks=("order",), shuffler=f"{client_file}:permute"))
    assert ok["implementation-shuffled"]["verdict"] == "consistent"
    bad = _pipeline(krr, attacks=("order",), shuffler=f"{client_file}:no_shuffle")
    found = verdicts(bad)["implementation-shuffled"]
    assert found["verdict"] == "violated" and "attack order" in found["reason"]


# ------------------------------------------------------------------------------------------
# Verdict subjects
# ------------------------------------------------------------------------------------------
def _verdict(exact, empirical, eps=1.0):
    return Verdict("b", "upper", "proven", "", 10, 1e-3, eps, 0.0, exact, empirical, 0.95,
                   "violated", "", None)


def test_subject_says_what_is_at_fault():
    assert verdict_subject(_verdict(1.2, 0.5), True) == SUBJECT_BOUND
    assert verdict_subject(_verdict(0.5, 1.2), True) == SUBJECT_IMPLEMENTATION
    assert verdict_subject(_verdict(0.5, 1.2), False) == SUBJECT_BOUND


# ------------------------------------------------------------------------------------------
# The three entry points
# ------------------------------------------------------------------------------------------
def _comparable(rows):
    drop = {"seconds"}
    return [{k: v for k, v in r.items() if k not in drop and v is not None} for r in rows]


@pytest.mark.parametrize("level, extra", [
    ("randomizer", {}), ("shuffle", {"n": 20, "delta": 1e-3}),
    ("pipeline", {"n": 20, "delta": 1e-3})])
def test_python_cli_and_scenario_give_the_same_rows(tmp_path, client_file, level, extra):
    spec = f"{client_file}:krr_13"
    trials = {"randomizer": 20_000, "shuffle": 4_000, "pipeline": 1_000}[level]
    bounds = ["optimal-blanket"]
    python = audit_implementation(spec, claim(), trials=trials, level=level, seed=3,
                                  bounds=tuple(bounds) if level != "randomizer" else None,
                                  **({"n": extra["n"], "delta": (extra["delta"],)}
                                     if extra else {}))
    args = ["audit", "--implementation", spec, "--randomizer", "krr", "--domain-size", "4",
            "--epsilon0", "2", "--trials", str(trials), "--level", level, "--seed", "3",
            "--json", "-q"]
    if extra:
        args += ["--n", str(extra["n"]), "--delta", str(extra["delta"]), "--bound", bounds[0]]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    cli = json.loads(result.output)
    audit_keys = f"""
        [audit]
        level = "{level}"
        trials = {trials}
        implementation = "client.py:krr_13"
        """
    if extra:
        audit_keys += f'delta = {extra["delta"]}\nbounds = ["{bounds[0]}"]\n'
    text = scenario_text(name="impl", seed=3, repetitions=None, n=extra.get("n", 20),
                         data=uniform(4), budget=constant_budget(2.0),
                         sections=textwrap.dedent(audit_keys))
    path = tmp_path / "s.toml"
    path.write_text(text)
    frame = run_scenario(load_scenario(path))["audit"].to_pylist()
    if level == "randomizer":  # the scenario's n is context only there
        for r in frame:
            r["n"] = None
        for r in python:
            r["n"] = None
    assert _comparable(python) == _comparable(frame)
    assert _comparable(python) == [{k: v for k, v in r.items() if k != "seconds"} for r in
                                   _comparable(cli)]
    assert any(r.get("verdict") == "violated" for r in python)


def test_shuffle_level_no_false_alarm_over_50_seeds():
    """Correct client at the shuffle level, confidence 0.9, 50 seeds: the pooled goodness of
    fit rejects with probability <= 0.1 per seed, and no attack bound may exceed the exact
    value of the declared pair beyond its confidence (each <= 0.1 per seed); both counts stay
    below the binomial(50, 0.1) 1e-4 quantile."""
    tested = implementation_randomizer(krr, claim())
    opts = AuditOptions(2_000, confidence=0.9)
    pi = np.full(K, 1.0 / K)
    rejected = exceeded = 0
    for seed in range(50):
        audit = audit_shuffle(tested, 30, [1e-3], opts, seed, x0=0, x1=1, others=pi)
        rejected += audit.fit_p_value < 0.1
        exceeded += audit.best(1e-3).epsilon_lb > audit.exact[1e-3]
    limit = stats.binom.ppf(1 - 1e-4, 50, 0.1)
    assert rejected <= limit and exceeded <= limit


def test_scenario_with_a_missing_implementation_is_one_line(tmp_path):
    text = scenario_text(name="bad", seed=1, repetitions=None, n=20, data=uniform(4),
                         budget=constant_budget(2.0), sections=textwrap.dedent("""
                         [audit]
                         level = "randomizer"
                         trials = 1000
                         implementation = "nowhere.py:krr"
                         """))
    path = tmp_path / "s.toml"
    path.write_text(text)
    result = CliRunner().invoke(main, ["run", str(path), "--out", str(tmp_path / "out"), "-q"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "audit.implementation" in lines[0] and "no such file" in lines[0]


def test_shuffle_level_unary_encoding_over_64_values_by_ratio_pairs():
    """OUE with 2^64 outputs: reports are mapped to the pair's groups by their declared ratio
    pairs (no output table); the pooled fit over groups passes the correct client and
    rejects the 1.3x one, in full and two-stage trials."""
    c64 = Claim.registered("oue", epsilon0=1.0, domain_size=64)
    opts = AuditOptions(2_000)
    for two_stage in (False, True):
        ok = audit_shuffle(implementation_randomizer(oue, c64), 20, [1e-3], opts, 1, x0=0,
                           x1=1, others=2, with_exact=False, two_stage=two_stage)
        bad = audit_shuffle(implementation_randomizer(oue_13, c64), 20, [1e-3], opts, 1,
                            x0=0, x1=1, others=2, with_exact=False, two_stage=two_stage)
        assert ok.fit_p_value > 0.05 and bad.fit_p_value < 1e-6
        assert ok.fits[0].test == "pooled chi-square over groups"
    leaky = audit_shuffle(implementation_randomizer(lambda v, r: 1 - oue(v, r), c64), 20,
                          [1e-3], opts, 1, x0=0, x1=1, others=2, with_exact=False)
    assert leaky.fit_p_value < 1e-6  # every bit flipped: valid reports, wrong group law


def test_shuffled_verdict_ignores_a_bound_below_the_exact_value():
    wrong = Verdict("low", "upper", "proven", "", 10, 1e-3, 0.5, 0.0, 0.9, 0.8, 0.95,
                    "violated", "", None)
    right = Verdict("high", "upper", "proven", "", 10, 1e-3, 1.2, 0.0, 0.9, 0.8, 0.95,
                    "consistent", "", None)
    v = shuffled_verdict(0.8, 0.95, [wrong, right], "krr", 10, 1e-3, "here")
    assert v.verdict == "consistent" and "high" in v.sentence
    v = shuffled_verdict(1.3, 0.95, [wrong, right], "krr", 10, 1e-3, "here")
    assert v.verdict == "violated" and "high = 1.2" in v.sentence
