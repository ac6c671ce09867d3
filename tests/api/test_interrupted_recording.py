"""A Ctrl-C (KeyboardInterrupt) that lands while an op is being recorded, as when a
notebook cell is interrupted: the op is not recorded, and later ops are not shifted onto
the wrong values; one that lands in a tensor's finalizer is raised again."""

import time
import types

import pytest
import torch
from api_check import assert_same

import gt
from gt.runtime import recording
from gt.runtime.interrupts import release_when_collected


@pytest.fixture
def interrupt_once(monkeypatch):
    """The next record is interrupted where it looks up the user's line, after the
    record went in, as a signal delivered there would."""
    real = recording.user_location
    pending = []

    def interrupted(*args, **kwargs):
        if pending:
            pending.pop()
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(recording, 'user_location', interrupted)
    return pending.append


@pytest.mark.parametrize('interrupted_op', [
    lambda m, x: x.exp(),                      # a one-input op (Client.record)
    lambda m, x: x + x,                        # a two-tensor op (Client.record_binary)
    lambda m, x: x + 100,                      # a number operand: a literal, then the add
    lambda m, x: x.topk(2).values,             # several outputs
    lambda m, x: m.nn.functional.softplus(x),  # a call by name
])
def test_an_interrupted_op_leaves_the_next_ops_their_own_values(interrupt_once,
                                                                 interrupted_op):
    x, want = gt.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0])
    before = x * 2
    interrupt_once(True)
    with pytest.raises(KeyboardInterrupt):
        interrupted_op(gt, x)
    negated, shifted, pair = x.neg(), x + 100, x.topk(2)
    assert_same(negated, -want)
    assert_same(shifted, want + 100)
    assert_same(pair.values, want.topk(2).values)
    assert_same(pair.indices, want.topk(2).indices)
    assert_same(before, want * 2)
    assert_same(interrupted_op(gt, x), interrupted_op(torch, want))  # the cell run again


def test_an_interrupted_send_goes_with_the_next(monkeypatch):
    """A Ctrl-C while a flush encodes its message: nothing went, so the work, its
    releases and its dropped values go with the next message, not lost."""
    from gt.runtime import client as runtime_client

    x, want = gt.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0])
    gone = gt.tensor([5.0]) * 2
    del gone  # a release waiting for the next message
    made = (x * 3).exp()
    real = runtime_client.encode_structure

    def interrupted(*args):
        monkeypatch.setattr(runtime_client, 'encode_structure', real)
        raise KeyboardInterrupt

    monkeypatch.setattr(runtime_client, 'encode_structure', interrupted)
    with pytest.raises(KeyboardInterrupt):
        gt.sync()
    assert_same(made, (want * 3).exp())
    assert_same(x.neg() + made, -want + (want * 3).exp())


def test_ctrl_c_during_a_send_is_raised_once_the_message_went():
    """A Submit half sent cannot be taken back: SIGINT waits for the end of the send."""
    import os
    import signal

    from gt.runtime.interrupts import InterruptsHeld

    done = []
    with pytest.raises(KeyboardInterrupt):
        with InterruptsHeld():
            os.kill(os.getpid(), signal.SIGINT)
            done.append('sent')
    assert done == ['sent'] and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    seen = []
    previous = signal.signal(signal.SIGINT, lambda *args: seen.append('the script\'s'))
    try:
        with InterruptsHeld():  # a script's own handler is left to handle it
            os.kill(os.getpid(), signal.SIGINT)
        assert seen == ["the script's"]
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_ctrl_c_landing_in_a_tensors_finalizer_is_raised_again():
    """Python drops an exception raised in `__del__` ("Exception ignored"): a Ctrl-C that
    landed as a tensor was collected was lost, and the script's loop ran on."""
    def interrupted(value_id):
        raise KeyboardInterrupt
    dying = types.SimpleNamespace(_id=7, _client=types.SimpleNamespace(release=interrupted))
    with pytest.raises(KeyboardInterrupt):
        release_when_collected(dying)
        time.sleep(1.0)  # the interrupt is raised in the main thread at its next check
