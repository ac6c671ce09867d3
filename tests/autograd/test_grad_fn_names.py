"""`grad_fn.name()` and `print(loss)` name torch's nodes: a loss by its kernel
(`NllLossBackward0`, not the mean that ends it), an index by the view torch takes last,
a torch function run by name by the function (found porting the autograd tutorial,
whose printouts differed)."""

import pytest
import torch

import gt

CASES = {
    'cross_entropy': lambda F, x, t, y: F.cross_entropy(x, t),
    'cross_entropy_none': lambda F, x, t, y: F.cross_entropy(x, t, reduction='none'),
    'cross_entropy_sum': lambda F, x, t, y: F.cross_entropy(x, t, reduction='sum'),
    'cross_entropy_smoothed': lambda F, x, t, y: F.cross_entropy(x, t, label_smoothing=0.1),
    'nll_loss': lambda F, x, t, y: F.nll_loss(x.log_softmax(1), t),
    'mse_loss': lambda F, x, t, y: F.mse_loss(x, y),
    'mse_loss_none': lambda F, x, t, y: F.mse_loss(x, y, reduction='none'),
    'l1_loss': lambda F, x, t, y: F.l1_loss(x, y),
    'smooth_l1_loss': lambda F, x, t, y: F.smooth_l1_loss(x, y),
    'huber_loss': lambda F, x, t, y: F.huber_loss(x, y),
    'binary_cross_entropy': lambda F, x, t, y: F.binary_cross_entropy(x.sigmoid(), y),
    'binary_cross_entropy_with_logits':
        lambda F, x, t, y: F.binary_cross_entropy_with_logits(x, y),
    'slice': lambda F, x, t, y: x[:1],
    'whole_slice': lambda F, x, t, y: x[:],
    'alias': lambda F, x, t, y: x[:, :],
    'select': lambda F, x, t, y: x[0],
    'select_after_slice': lambda F, x, t, y: x[:, 1],
    'slice_after_select': lambda F, x, t, y: x[1, 0:2],
    'unsqueeze': lambda F, x, t, y: x[1, None],
    'index': lambda F, x, t, y: x[[0, 1]],
    'mask': lambda F, x, t, y: x[x > 0],
    'cumsum': lambda F, x, t, y: x.cumsum(0),
}


@pytest.mark.parametrize('case', CASES)
def test_grad_fn_names_are_torchs(case):
    def name(library):
        library.manual_seed(0)
        x = library.randn(4, 3, requires_grad=True)
        t, y = library.tensor([0, 2, 1, 1]), library.rand(4, 3)
        return CASES[case](library.nn.functional, x, t, y).grad_fn.name()
    assert name(gt) == name(torch)


def test_a_printed_loss_names_torchs_node():
    def printed(library):
        library.manual_seed(0)
        logits = library.randn(4, 3, requires_grad=True)
        return repr(library.nn.CrossEntropyLoss()(logits, library.tensor([0, 2, 1, 1])))
    assert printed(gt) == printed(torch)
