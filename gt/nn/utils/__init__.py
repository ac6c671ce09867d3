"""torch.nn.utils for GT: gradient clipping, parameters as one vector, padding of
variable-length sequences (`rnn`), weight and spectral normalization (the hook forms,
and the `parametrizations` built on `parametrize`), pruning, folding a batch norm into
the layer before it (`fusion`), `skip_init` and `stateless.functional_call`."""

from gt.nn.utils import (
    clip_grad,
    fusion,
    parametrizations,
    parametrize,
    prune,
    rnn,
    stateless,
)
from gt.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from gt.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from gt.nn.utils.fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from gt.nn.utils.init import skip_init
from gt.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm
from gt.nn.utils.weight_norm import remove_weight_norm, weight_norm

__all__ = ['stateless', 'parametrize', 'parametrizations', 'prune', 'clip_grad',
           'clip_grad_norm', 'clip_grad_norm_',
           'clip_grad_value_', 'clip_grads_with_norm_', 'get_total_norm',
           'parameters_to_vector', 'vector_to_parameters', 'rnn',
           'weight_norm', 'remove_weight_norm', 'spectral_norm', 'remove_spectral_norm',
           'fusion', 'fuse_conv_bn_eval', 'fuse_conv_bn_weights', 'fuse_linear_bn_eval',
           'fuse_linear_bn_weights', 'skip_init']
