"""`gt.autograd.Function`'s errors against torch's: the same exception, with the same
message, for bad gradients, bad saves, dirty tensors, and misuse of the class."""

import numpy as np
import pytest
import torch
from function_check import InPlaceBody, ReLU, both, check, same_error

import gt


def bad_backward(name: str, backward):
    """A Function of a tensor and any numbers whose backward is `backward(grad)`."""
    def forward(ctx, x, *numbers):
        return x * 2

    return both(type(name, (), {'forward': staticmethod(forward),
                                'backward': staticmethod(lambda ctx, grad: backward(grad))}))


@pytest.mark.parametrize('name, backward, arguments', [
    ('TooFew', lambda grad: grad, 2),
    ('TooMany', lambda grad: (grad, grad), 1),
    ('BadShape', lambda grad: grad.sum(0), 1),
    ('NotATensor', lambda grad: 3, 1),
    ('NumberGrad', lambda grad: (grad, grad), 2),
])
def test_bad_gradients_raise_torch_s_errors(name, backward, arguments):
    function = bad_backward(name, backward)

    def step(library, x):
        function[library].apply(x, *range(arguments - 1)).sum().backward()

    same_error(step)


def test_extra_none_gradients_and_broadcast_gradients_are_accepted():
    extra = bad_backward('ExtraNone', lambda grad: (grad * 3, None, None))
    broadcast = bad_backward('Broadcast', lambda grad: grad.expand(4, 2, 3))
    check(lambda library, x: [extra[library].apply(x).sum().backward()], (2, 3))
    check(lambda library, x: [broadcast[library].apply(x).sum().backward()], (2, 3))


class SavesNumberBody:
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x, 3)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad


class DirtyLeafBody(InPlaceBody):
    pass


class DirtyNotReturnedBody(InPlaceBody):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x * 1


def test_forward_errors_raise_torch_s_errors():
    same_error(lambda library, x: both(SavesNumberBody)[library].apply(x), TypeError)
    same_error(lambda library, x: both(DirtyLeafBody)[library].apply(x))
    same_error(lambda library, x: both(DirtyNotReturnedBody)[library].apply(x * 1))


def test_an_instance_warns_and_calling_it_raises():
    def call(library, x):
        with pytest.warns(DeprecationWarning, match='should not be instantiated'):
            instance = ReLU[library]()
        instance(x)

    same_error(call)


def test_backward_twice_raises_and_a_saved_input_changed_later_keeps_its_value():
    for library in (torch, gt):
        x = library.tensor(np.arange(3.0), requires_grad=True)
        y = ReLU[library].apply(x)
        y.sum().backward()
        with pytest.raises(RuntimeError, match='(?i)backward through the graph a second time'):
            y.sum().backward()
        x.grad = None
        h = x * 1
        y = ReLU[library].apply(h)
        h += 1
        if library is torch:
            with pytest.raises(RuntimeError, match='modified by an inplace operation'):
                y.sum().backward()
        else:  # the tape kept the value forward saw, so backward gives its gradient
            y.sum().backward()
            assert x.grad.tolist() == [0.0, 1.0, 1.0]


def test_an_unmarked_in_place_update_of_an_input_with_history_is_refused():
    class Sneaky(gt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = gt.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match='without ctx.mark_dirty'):
        Sneaky.apply(x * 1)
