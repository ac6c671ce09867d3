"""`gt.autograd.Function` against torch's: each Function below is written once, as a body
both libraries' Function classes are made from, and run on torch and on GT leaves
holding the same data; values, gradients, flags and error messages must match."""

import gc
import weakref

import pytest
import torch
from check import lib, rng
from function_check import InPlace, ReLU, both, check, compare, grad_fn_name, same_error

import gt
from gt import backward_replay


def test_relu_values_grads_and_grad_fn():
    def step(library, x):
        y = ReLU[library].apply(x)
        (y * y).sum().backward()
        return [y, y.requires_grad, grad_fn_name(y), y.is_leaf]

    check(step, (4, 5))


def test_exposed_where_torch_has_it():
    assert issubclass(ReLU[gt], gt.autograd.Function)
    assert gt.autograd.function.Function is gt.autograd.Function
    seen = []

    class Body:
        @staticmethod
        def forward(ctx, x):
            seen.append(isinstance(ctx, gt.autograd.function.FunctionCtx))
            return x * 2

        @staticmethod
        @gt.autograd.function.once_differentiable
        def backward(ctx, grad):
            return grad * 2

    Double = both(Body)[gt]
    Double.apply(gt.ones(2, requires_grad=True)).sum().backward()
    assert seen == [True]


class VjpBody:
    """torch's other name for backward."""

    @staticmethod
    def forward(ctx, x):
        return x * 4

    @staticmethod
    def vjp(ctx, grad):
        return grad * 4


def test_vjp_is_backward():
    Vjp = both(VjpBody)
    check(lambda library, x: [Vjp[library].apply(x).sum().backward()], (3,))


class TwoOutputsBody:
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y, x + y.exp()

    @staticmethod
    def backward(ctx, grad_product, grad_sum):
        x, y = ctx.saved_tensors
        return grad_product * y + grad_sum, grad_product * x + grad_sum * y.exp()


TwoOutputs = both(TwoOutputsBody)


@pytest.mark.parametrize('used', ['both', 'first', 'second'])
def test_two_outputs(used):
    """An output whose gradient never arrives gets zeros (materialized), as in torch."""
    def step(library, x, y):
        product, total = TwoOutputs[library].apply(x, y)
        loss = {'both': (product * total).sum(), 'first': product.sum(),
                'second': total.pow(2).sum()}[used]
        loss.backward()
        return [product, total, grad_fn_name(product), grad_fn_name(total)]

    check(step, (3, 4), (3, 4))


class ScaledBody:
    """Numbers, a flag and None among the arguments; the output mixes in non-tensors."""

    @staticmethod
    def forward(ctx, x, scale, weight, flip, unused):
        ctx.scale, ctx.flip = scale, flip
        ctx.save_for_backward(weight)
        out = x * weight * scale
        return (-out if flip else out), scale, None

    @staticmethod
    def backward(ctx, grad, grad_scale, grad_none):
        assert grad_scale is None and grad_none is None
        weight, = ctx.saved_tensors
        grad = -grad if ctx.flip else grad
        return grad * weight * ctx.scale, None, None, None, None


Scaled = both(ScaledBody)


@pytest.mark.parametrize('flip', [False, True])
def test_non_tensor_arguments_and_outputs(flip):
    def step(library, x, w):
        out, scale, nothing = Scaled[library].apply(x, 2.5, w, flip, None)
        out.sum().backward()
        return [out, scale, nothing]

    check(step, (2, 3), (3,))


class NeedsBody:
    @staticmethod
    def forward(ctx, x, y, k, log):
        log.append(('forward', ctx.needs_input_grad, lib(x).is_grad_enabled()))
        ctx.save_for_backward(x, y)
        ctx.log = log
        return x * y * k

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        ctx.log.append(('backward', ctx.needs_input_grad, lib(x).is_grad_enabled()))
        return (grad * y * 3 if ctx.needs_input_grad[0] else None,
                grad * x * 3 if ctx.needs_input_grad[1] else None, None, None)


Needs = both(NeedsBody)


def test_needs_input_grad_and_grad_mode_in_forward_and_backward():
    def step(library, x, y):
        log = []
        Needs[library].apply(x, y.detach(), 3, log).sum().backward()
        return [log, x.grad is None, y.grad is None]

    check(step, (4,), (4,))


def test_no_grad_fn_without_inputs_requiring_grad_or_under_no_grad():
    for library in (torch, gt):
        x = library.ones(3, requires_grad=True)
        plain = library.ones(3)
        assert not ReLU[library].apply(plain).requires_grad
        with library.no_grad():
            out = ReLU[library].apply(x)
        assert not out.requires_grad and out.grad_fn is None


class SortBody:
    @staticmethod
    def forward(ctx, x):
        values, indices = x.sort()
        doubled = x * 2
        ctx.mark_non_differentiable(indices, doubled)
        ctx.save_for_backward(indices)
        return values, indices, doubled

    @staticmethod
    def backward(ctx, grad_values, grad_indices, grad_doubled):
        indices, = ctx.saved_tensors
        ctx.seen = [grad_indices, grad_doubled]
        return lib(grad_values).zeros_like(grad_values).scatter(-1, indices, grad_values)


Sort = both(SortBody)


def test_mark_non_differentiable():
    """Marked outputs do not require grad; backward still gets a zero gradient for each
    (an integer one for indices), as torch gives."""
    def step(library, x):
        values, indices, doubled = Sort[library].apply(x)
        node = values.grad_fn
        (values * values).sum().backward()
        return [values, indices, doubled, values.requires_grad, indices.requires_grad,
                doubled.requires_grad, doubled.grad_fn is None, *_seen(library, node)]

    check(step, (3, 5))


def _seen(library, grad_fn):
    """What the backward put on its ctx (torch's grad_fn is its ctx; GT's holds it)."""
    return (grad_fn.ctx if library is gt else grad_fn).seen


class LazyBody:
    @staticmethod
    def forward(ctx, x, materialize):
        ctx.set_materialize_grads(materialize)
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, grad_double, grad_triple):
        ctx.seen = [grad_double is None, grad_triple is None]
        grad = 0
        if grad_double is not None:
            grad = grad + grad_double * 2
        if grad_triple is not None:
            grad = grad + grad_triple * 3
        return grad, None


Lazy = both(LazyBody)


@pytest.mark.parametrize('materialize', [True, False])
def test_set_materialize_grads(materialize):
    def step(library, x):
        double, triple = Lazy[library].apply(x, materialize)
        node = double.grad_fn
        triple.sum().backward()
        return [double, triple, *_seen(library, node)]

    check(step, (4,))


class CubeBody:
    """The newer style: forward without ctx, and setup_context (with a default)."""

    @staticmethod
    def forward(x, power=3, shift=0.0):
        return x ** power + shift

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, power, shift = inputs
        ctx.save_for_backward(x)
        ctx.power = power

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad * ctx.power * x ** (ctx.power - 1), None, None


Cube = both(CubeBody)


def test_setup_context_style():
    def step(library, x, y):
        out = Cube[library].apply(x) + Cube[library].apply(y, 2, shift=1.5)
        out.sum().backward()
        return [out]

    check(step, (5,), (5,))


class ExpBody:
    """Saves its output: a second derivative must go through this node again."""

    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        result, = ctx.saved_tensors
        return grad * result


Exp = both(ExpBody)


def test_a_saved_output_makes_no_reference_cycle():
    """The node keeps an alias of an output it saved, not the output (whose grad_fn it
    is): a tape never walked (an evaluation in grad mode) dies with its tensors, without
    waiting for the cycle collector."""
    x = gt.ones(3, requires_grad=True)
    gc.disable()
    try:
        y = Exp[gt].apply(x)
        node = weakref.ref(y.grad_fn)
        del y
        assert node() is None
    finally:
        gc.enable()


def test_double_backward_through_saved_inputs_and_outputs():
    def step(library, x):
        y = Cube[library].apply(x) * Exp[library].apply(x * 0.5)
        first, = library.autograd.grad(y.sum(), x, create_graph=True)
        second, = library.autograd.grad((first * first).sum(), x, create_graph=True)
        third, = library.autograd.grad(second.sum(), x)
        return [y, first, second, third, first.requires_grad]

    check(step, (4,))


@pytest.mark.filterwarnings('ignore:Using backward\\(\\) with create_graph')
def test_double_backward_by_backward_create_graph():
    def step(library, x):
        Exp[library].apply(x).pow(2).sum().backward(create_graph=True)
        first = x.grad
        x.grad = None
        first.sum().backward()
        return [first]

    check(step, (3,))


def square(library) -> type:
    """x * x, its backward decorated by the library's once_differentiable."""
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @library.autograd.function.once_differentiable
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return 2 * grad * x

    return type('Square', (library.autograd.Function,),
                {'forward': staticmethod(forward), 'backward': staticmethod(backward)})


@pytest.mark.filterwarnings('ignore:Using backward\\(\\) with create_graph')
def test_once_differentiable():
    """First derivatives as usual, taped or not; a second one through it raises."""
    Square = {library: square(library) for library in (torch, gt)}

    def step(library, x):
        y = Square[library].apply(x)
        first, = library.autograd.grad((y * x).sum(), x, create_graph=True)
        (y * y).sum().backward()
        return [y, first, first.requires_grad]

    check(step, (3,))
    same_error(lambda library, x: library.autograd.grad(
        (Square[library].apply(x) * x).sum(), x, create_graph=True)[0].sum().backward())


def test_hooks_and_retain_grad_on_outputs():
    def step(library, x):
        seen = []
        y = Exp[library].apply(x)
        y.register_hook(lambda grad: seen.append(grad) or grad * 10)
        y.retain_grad()
        (y * y).sum().backward()
        return [y.grad, *seen]

    check(step, (2, 3))




def test_mark_dirty_updates_the_input_and_keeps_its_history():
    def step(library, x):
        h = x * 3  # a product by a number saves nothing that the update would change
        out = InPlace[library].apply(h)
        (out * x).sum().backward()
        return [out is h, h, grad_fn_name(h)]

    check(step, (2, 3))


class AccumulateBody:
    """Updates a tensor that needs no grad with one that does: the result requires grad."""

    @staticmethod
    def forward(ctx, total, x):
        total.add_(x)
        ctx.mark_dirty(total)
        return total

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


Accumulate = both(AccumulateBody)


def test_mark_dirty_on_a_tensor_without_grad():
    def step(library, x):
        total = x.detach() * 0 + 1
        out = Accumulate[library].apply(total, x)
        (out * out).sum().backward()
        return [out is total, total, total.requires_grad]

    check(step, (3,))


class IdentityBody:
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 3


Identity = both(IdentityBody)


def test_an_input_returned_as_is_becomes_a_new_output():
    def step(library, x):
        y = Identity[library].apply(x)
        y.sum().backward()
        return [y is x, y, x.is_leaf, grad_fn_name(y)]

    check(step, (3,))


# ---- a training loop -------------------------------------------------------------------
class LinearBody:
    """A linear layer whose output is scaled by a number that changes every step: a
    replayed backward (the first step's ops) would scale by the wrong number."""

    @staticmethod
    def forward(ctx, x, weight, bias, scale):
        ctx.save_for_backward(x, weight)
        ctx.scale = scale
        return (x @ weight.t() + bias) * scale

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        grad = grad * ctx.scale
        return grad @ weight, grad.t() @ x, grad.sum(0), None


Linear = both(LinearBody)


def model(library, weight, bias, head):
    class Model(library.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = library.nn.Parameter(library.tensor(weight))
            self.bias = library.nn.Parameter(library.tensor(bias))
            self.head = library.nn.Parameter(library.tensor(head))

        def forward(self, x, scale):
            hidden = Linear[library].apply(x, self.weight, self.bias, scale).tanh()
            return ReLU[library].apply(hidden) @ self.head

    return Model()


def test_a_training_loop_with_sgd():
    generator = rng()
    x, target = generator.standard_normal((8, 5)), generator.standard_normal((8, 2))
    weight, bias, head = (generator.standard_normal(shape) for shape in ((6, 5), (6,), (6, 2)))
    models = {library: model(library, weight, bias, head) for library in (torch, gt)}
    optimizers = {library: library.optim.SGD(models[library].parameters(), lr=0.05,
                                             momentum=0.9) for library in (torch, gt)}
    replayed = backward_replay.counts['replayed']
    for step in range(5):
        seen = {}
        for library in (torch, gt):
            optimizers[library].zero_grad()
            out = models[library](library.tensor(x), 1.0 + step / 4)
            loss = ((out - library.tensor(target)) ** 2).mean()
            loss.backward()
            seen[library] = [loss] + [p.grad for p in models[library].parameters()]
            optimizers[library].step()
            seen[library] += list(models[library].parameters())
        compare(seen[gt], seen[torch])
    assert backward_replay.counts['replayed'] == replayed  # its tape is never replayed
