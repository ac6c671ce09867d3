"""Anomaly mode against torch's: `detect_anomaly()` and `set_detect_anomaly()` switch it
as torch's do; in it, a backward (or `autograd.grad`) whose gradient rules produce a NaN
raises torch's error naming the op and warns with the forward call's traceback, and one
that produces none gives torch's gradients; out of it, a backward fetches nothing."""

import re
import warnings
from typing import Any, Callable

import pytest
import torch
from check import fetch, rng

import gt
from gt.runtime import client

NAN = float('nan')


def switches(library: Any) -> list:
    """The mode as the user sees it through a sequence of switches."""
    def now() -> tuple[bool, bool]:
        return library.is_anomaly_enabled(), library.is_anomaly_check_nan_enabled()

    seen = [now()]
    with pytest.warns(UserWarning, match='Anomaly Detection has been enabled'):
        manager = library.autograd.detect_anomaly(check_nan=False)
    seen.append(now())  # made, not entered
    with manager:
        seen.append(now())
        with library.autograd.set_detect_anomaly(False):
            seen.append(now())
        seen.append(now())
    seen.append(now())
    library.autograd.set_detect_anomaly(True)  # called plainly, it stays set
    seen.append(now())
    library.autograd.set_detect_anomaly(False)
    seen.append(now())
    return seen


def test_the_mode_switches_as_torch_s_does():
    assert switches(gt) == switches(torch)


def backward_in_the_mode(library: Any, function: Callable, values: list, through_grad: bool,
                         check_nan: bool = True) -> tuple[Any, list[str]]:
    """`function`'s backward in anomaly mode: the gradients, or the error's message; and
    the warnings that show a forward call."""
    inputs = [library.tensor(v, dtype=library.float64, requires_grad=True) for v in values]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        with library.autograd.detect_anomaly(check_nan=check_nan):
            try:
                output = function(library, *inputs)
                if through_grad:
                    gradients = list(library.autograd.grad(output, inputs))
                else:
                    output.backward()
                    gradients = [x.grad for x in inputs]
            except RuntimeError as error:
                gradients = str(error)
    forward = [str(w.message) for w in caught if 'Traceback of forward call' in str(w.message)]
    return gradients, forward


def innermost_frame(warning: str) -> tuple[str, str]:
    """The line and function of the last frame a forward traceback shows."""
    return re.findall(r'line (\d+), in (\S+)', warning)[-1]


NAN_CASES = {
    'sqrt at 0, times 0': (lambda lib, x: (x.sqrt() * 0).sum(), [[0.0, 1.0]]),
    'its 0th output': (lambda lib, y, z: (y * z.sum()).sum(), [[1.0, 2.0], [NAN]]),
    'its 1th output': (lambda lib, y, z: (z.sum() * y).sum(), [[1.0, 2.0], [NAN]]),
    'a function run by name': (lambda lib, x, y: lib.xlogy(x, y).sum(),
                               [[0.0, 1.0], [0.0, 2.0]]),
    'the first of a chain': (lambda lib, x: (x.sqrt() * 0).exp().tanh().mean(), [[0.0, 4.0]]),
}


@pytest.mark.parametrize('through_grad', [False, True], ids=['backward', 'grad'])
@pytest.mark.parametrize('name', NAN_CASES)
def test_a_nan_gradient_raises_naming_the_op_as_torch_does(name, through_grad):
    function, values = NAN_CASES[name]
    want, torch_forward = backward_in_the_mode(torch, function, values, through_grad)
    got, forward = backward_in_the_mode(gt, function, values, through_grad)
    assert isinstance(want, str), f'torch raises no error here: {want}'
    # torch numbers the backward of each overload (MaxBackward1); GT's ops have one: 0
    assert unnumbered(got) == unnumbered(want)
    assert len(forward) == len(torch_forward) == 1
    assert innermost_frame(forward[0]) == innermost_frame(torch_forward[0])
    assert unnumbered(torch_forward[0]).startswith(
        unnumbered(forward[0].split(':', 1)[0]))  # 'Error detected in SqrtBackward0. ...'


def unnumbered(text: str) -> str:
    return re.sub(r'(Backward)\d+', r'\1', text)


def test_no_gradient_is_written_when_it_raises():
    x = gt.tensor([0.0, 1.0], requires_grad=True)
    with pytest.warns(UserWarning), gt.autograd.detect_anomaly():
        with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan"):
            (x.sqrt() * 0).sum().backward()
    assert x.grad is None


QUIET_CASES = {
    'a network': (lambda lib, x, w: (x @ w).tanh().softmax(-1).log().mean(),
                  [rng().standard_normal((4, 3)), rng().standard_normal((3, 5))]),
    # torch checks what each backward function gives, not the sums of a leaf's parts
    'NaN only where a gradient is summed': (lambda lib, x: (x - x).sqrt().sum(),
                                            [[0.0, 1.0]]),
    'a NaN value, finite gradients': (lambda lib, z: (z * 2).sum(), [[NAN, 1.0]]),
}


@pytest.mark.parametrize('through_grad', [False, True], ids=['backward', 'grad'])
@pytest.mark.parametrize('name', QUIET_CASES)
def test_a_backward_without_nan_gradients_gives_torch_s(name, through_grad):
    function, values = QUIET_CASES[name]
    want, _ = backward_in_the_mode(torch, function, values, through_grad)
    got, _ = backward_in_the_mode(gt, function, values, through_grad)
    assert not isinstance(got, str), got
    for g, w in zip(fetch(got), want):
        torch.testing.assert_close(g, w, equal_nan=True)


def test_without_nan_checks_it_does_not_raise_as_torch_s():
    function, values = NAN_CASES['sqrt at 0, times 0']
    want, _ = backward_in_the_mode(torch, function, values, False, check_nan=False)
    got, _ = backward_in_the_mode(gt, function, values, False, check_nan=False)
    torch.testing.assert_close(got[0].data, want[0], equal_nan=True)


@pytest.fixture
def fetches(monkeypatch) -> list:
    """The fetches (round trips to the workers) the client makes during the test."""
    made: list = []
    session = client.current()
    fetch_values = session.fetch

    def counting(*args: Any, **kwargs: Any) -> Any:
        made.append(args)
        return fetch_values(*args, **kwargs)
    monkeypatch.setattr(session, 'fetch', counting)
    return made


def test_the_check_costs_one_round_trip_in_the_mode_and_none_out_of_it(fetches):
    data = rng().standard_normal((4, 3))
    x, w = gt.tensor(data, requires_grad=True), gt.tensor(data.T, requires_grad=True)
    for _ in range(3):  # the rules run, then are recorded, then replayed
        (x @ w).tanh().sum().backward()
    assert fetches == []
    with pytest.warns(UserWarning), gt.autograd.detect_anomaly():
        (x @ w).tanh().sum().backward()
    assert len(fetches) == 1
    tx, tw = torch.tensor(data, requires_grad=True), torch.tensor(data.T, requires_grad=True)
    for _ in range(4):
        (tx @ tw).tanh().sum().backward()
    for got, want in zip(fetch([x.grad, w.grad]), [tx.grad, tw.grad]):
        torch.testing.assert_close(got, want)
