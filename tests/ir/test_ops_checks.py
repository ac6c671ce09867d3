"""The 'check_between' row against torch's own check, binary_cross_entropy's: both its
torch and numpy forms pass what torch passes and raise what torch raises (values outside
[0, 1], NaN), and its type rule takes any one tensor and makes nothing."""

import pytest
import torch

from gt.ir import OPS
from gt.ir.graph import TensorType

ROW = OPS['check_between']
MESSAGE = 'all elements of input should be between 0 and 1'
CASES = {'inside': [0.0, 0.5, 1.0], 'above': [0.5, 1.0000001], 'below': [-1e-7, 0.5],
         'nan': [float('nan'), 0.5], 'empty': []}


@pytest.mark.parametrize('case', CASES)
@pytest.mark.parametrize('engine', ['torch', 'numpy'])
def test_it_raises_where_torchs_binary_cross_entropy_does(case, engine):
    values = torch.tensor(CASES[case])
    try:
        torch.nn.functional.binary_cross_entropy(values, torch.zeros_like(values))
        torch_raised = None
    except RuntimeError as error:
        torch_raised = str(error)
    run = ROW.torch if engine == 'torch' else ROW.numpy
    given = values if engine == 'torch' else values.numpy()
    if torch_raised is None:
        assert run(given, low=0.0, high=1.0, message=MESSAGE) == ()
    else:
        with pytest.raises(RuntimeError, match=MESSAGE):
            run(given, low=0.0, high=1.0, message=MESSAGE)
        assert MESSAGE in torch_raised


def test_its_type_rule_takes_one_tensor_and_makes_nothing():
    assert ROW.infer((TensorType((2, 3), 'float64'),), low=0.0, high=1.0, message=MESSAGE) == ()
    with pytest.raises(ValueError, match='one input'):
        ROW.infer((), low=0.0, high=1.0, message=MESSAGE)
    assert ROW.effects and not ROW.traces({})  # kept by dead-code elimination, never compiled
