"""The user-code adapter (simulator/usercode.py, issue 26): every failure of user code is one
picklable line naming the file and function; its stdout goes to stderr; a per-call time limit;
returned values checked; ParameterError / ScenarioError survive SimPy and pickling."""

from __future__ import annotations

import io
import pickle
import sys
import threading
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest
import simpy

from shufflesim.protocols.errors import ParameterError
from shufflesim.simulator.errors import ScenarioError, UserError
from shufflesim.simulator.usercode import (
    UserCodeError,
    UserFunction,
    call,
    load_function,
    numeric_array,
    numeric_column,
    set_time_limit,
    time_limit,
)

CLIENT = '''
import sys, time
print("imported")
def exits(values, rng):
    sys.exit(3)
def raises(values, rng):
    return 1 / 0
def interrupts(values, rng):
    raise KeyboardInterrupt
def hangs(values, rng):
    while True:
        time.sleep(0.01)
def spins(values, rng):
    while True:
        pass
def prints(values, rng):
    print("noise")
    return values
'''


@pytest.fixture
def client(tmp_path):
    path = tmp_path / "client.py"
    path.write_text(CLIENT)
    return path


def _load(client, name):
    return load_function(f"{client}:{name}", "implementation")


@pytest.mark.parametrize("name, words", [
    ("exits", "called sys.exit(3)"),
    ("raises", "raised ZeroDivisionError: division by zero"),
    ("interrupts", "raised KeyboardInterrupt"),
])
def test_every_exception_is_one_line_naming_file_line_and_function(client, name, words):
    function = _load(client, name)
    with pytest.raises(UserCodeError) as caught:
        call(function, np.arange(3), None, field="implementation", source=f"{client}:{name}")
    line = str(caught.value)
    assert "\n" not in line and words in line
    assert line.startswith(f"implementation = '{client}:{name}'")
    assert "client.py:" in line and f"in {name})" in line


def test_user_code_stdout_goes_to_stderr(client):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        function = _load(client, "prints")
        call(function, np.arange(2), None, field="implementation")
        print("result")
    assert out.getvalue() == "result\n"
    assert "imported" in err.getvalue() and "noise" in err.getvalue()


def test_a_module_that_exits_at_import_is_one_line(tmp_path):
    path = tmp_path / "leaves.py"
    path.write_text("import sys\nsys.exit(0)\n")
    with pytest.raises(UserCodeError, match=r"importing .*leaves.py failed: called sys.exit\(0\)"):
        load_function(f"{path}:f", "shuffler")


def test_a_directory_is_not_called_a_missing_file(tmp_path):
    with pytest.raises(UserCodeError, match="is a directory"):
        load_function(f"{tmp_path}/:f", "implementation")


@pytest.mark.parametrize("name", ["hangs", "spins"])
def test_the_time_limit_stops_a_call_in_the_main_thread(client, name):
    function = _load(client, name)
    with pytest.raises(UserCodeError, match="did not return within 0.2 s.*--call-timeout"):
        call(function, 1, None, field="implementation", seconds=0.2)


def test_the_time_limit_stops_a_call_in_another_thread(client):
    function = _load(client, "spins")
    caught = []

    def worker():
        try:
            call(function, 1, None, field="implementation", seconds=0.2)
        except UserCodeError as error:
            caught.append(error)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(120)  # generous: only a bound on a hang, not a timing assertion
    assert not thread.is_alive() and len(caught) == 1


def test_time_limit_setting():
    before = time_limit()
    try:
        set_time_limit(0)
        assert time_limit() is None
        set_time_limit(5)
        assert time_limit() == 5.0
        with pytest.raises(ParameterError, match="call_timeout"):
            set_time_limit(-1)
    finally:
        set_time_limit(before)


@pytest.mark.parametrize("value, words", [
    (None, "returned None"),
    ("abc", "returned the string 'abc'"),
    (np.array([object(), 1]), "object array"),
    ([[1, 2], [3]], "cannot read as an array"),
    (np.array(["a", "b"]), "<U1"),
])
def test_returned_values_that_are_not_numbers(value, words):
    with pytest.raises(UserCodeError, match=words):
        numeric_array(value, "implementation", "client.py:f")


def test_numeric_object_arrays_are_accepted():
    out = numeric_array(np.array([1, 2.5], dtype=object), "implementation", "f")
    assert out.dtype == np.float64 and out.tolist() == [1.0, 2.5]


def test_a_string_in_a_numeric_column_is_one_line():
    with pytest.raises(ScenarioError, match=r"column = 'x': data.csv column 'x' holds 'a', not "
                                            r"a number \(row 2\)"):
        numeric_column(np.array(["1", "a"], dtype=object), "column", "x",
                       "data.csv column 'x'")


def test_user_function_checks_numbers():
    f = UserFunction(lambda reports, x: None, "support", "dec.py:support", numeric=True)
    with pytest.raises(UserCodeError, match="support = 'dec.py:support': returned None"):
        f(np.arange(3), 0)


ERRORS = [
    ParameterError("epsilon0", np.float64(0.0), "must be > 0"),
    ScenarioError("population.n", 1, "must be >= 2"),
    UserCodeError("shuffler", "s.py:f", "must return a permutation"),
    ParameterError("x", lambda: 0, "not picklable itself"),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_errors_survive_recreation_and_pickling(error):
    again = type(error)(*error.args)
    assert str(again) == str(error)
    restored = pickle.loads(pickle.dumps(error))
    assert type(restored) is type(error) and str(restored) == str(error)


def test_values_print_plainly():
    assert str(ParameterError("a", np.float64(0.0), "r")) == "a = 0.0: r"
    import datetime
    assert str(ScenarioError("d", datetime.date(2020, 1, 2), "r")) == "d = 2020-01-02: r"


def test_a_user_code_error_crosses_simpy_intact():
    env = simpy.Environment()

    def failing(env):
        yield env.timeout(1)
        raise UserCodeError("shuffler", "s.py:f", "must return a permutation")

    def waiting(env):
        yield env.process(failing(env))

    env.process(waiting(env))
    with pytest.raises(UserCodeError, match="shuffler = 's.py:f': must return a permutation"):
        env.run()


def test_user_code_error_is_a_user_error_and_a_parameter_error():
    error = UserCodeError("shuffler", "s.py:f", "x")
    assert isinstance(error, UserError) and isinstance(error, ParameterError)
    assert error.field == "shuffler"
    assert sys.modules[type(error).__module__]


def test_the_input_offset_hint_only_for_one_past_the_top():
    """A report one past the top suggests a client numbering from 1; any other report outside
    the encoding (here 7 for 4 categories) does not carry that hint (issue 26)."""
    from shufflesim.simulator.audit.implementation import Claim, implementation_randomizer

    claim = Claim.registered("krr", epsilon0=1.0, domain_size=4)

    def far(values, rng):
        return np.full(np.shape(values), 7)

    def one_past(values, rng):
        return np.asarray(values) + 1

    with pytest.raises(ParameterError) as caught:
        implementation_randomizer(far, claim).randomize(np.arange(4), np.random.default_rng(0))
    assert "outside the claimed encoding" in str(caught.value)
    assert "needs input_offset" not in str(caught.value)
    with pytest.raises(ParameterError, match="input_offset = 1"):
        implementation_randomizer(one_past, claim).randomize(np.arange(4).repeat(20),
                                                             np.random.default_rng(0))
