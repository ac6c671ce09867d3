"""Neural networks on GT tensors with torch.nn's API: `Module`, containers, layers
(linear, convolution, pooling, normalization, activations, attention and transformers,
recurrent), losses, `init` and `utils`
(gradient clipping), so a PyTorch training script ports by changing its imports.
The optimizers live in `gt.optim`; `gt.nn.SGD` and `gt.nn.optim` still name them.

    from gt.nn import Module, Linear
    import gt.nn.functional as F
"""

from gt.nn import functional, init, optim, utils
from gt.nn.activations import ELU, Hardtanh, LeakyReLU, Mish, ReLU6, SiLU, Softplus
from gt.nn.attention import MultiheadAttention
from gt.nn.batch_norm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from gt.nn.containers import (
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from gt.nn.conv import Conv1d, Conv2d
from gt.nn.functional import relu, sigmoid, tanh
from gt.nn.layers import (
    GELU,
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    L1Loss,
    LayerNorm,
    Linear,
    LogSoftmax,
    MSELoss,
    NLLLoss,
    ReLU,
    Sigmoid,
    Softmax,
    Tanh,
)
from gt.nn.losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    mse_loss,
    nll_loss,
)
from gt.nn.module import Module
from gt.nn.optim import SGD, Adam, AdamW, Optimizer
from gt.nn.parameter import Parameter
from gt.nn.pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)
from gt.nn.recurrent import GRU, LSTM, RNN, RNNBase
from gt.nn.recurrent_cells import GRUCell, LSTMCell, RNNCell, RNNCellBase
from gt.nn.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    'Module', 'Parameter', 'Sequential', 'ModuleList', 'Linear', 'Embedding', 'LayerNorm',
    'BatchNorm1d', 'BatchNorm2d', 'BatchNorm3d',
    'Dropout', 'ReLU', 'Sigmoid', 'Tanh', 'GELU', 'Softmax', 'LogSoftmax', 'Flatten',
    'Identity', 'MSELoss', 'L1Loss', 'BCELoss', 'BCEWithLogitsLoss', 'NLLLoss',
    'CrossEntropyLoss', 'mse_loss', 'l1_loss', 'binary_cross_entropy',
    'binary_cross_entropy_with_logits', 'cross_entropy', 'nll_loss', 'Optimizer', 'SGD', 'Adam',
    'AdamW', 'functional', 'optim', 'utils', 'relu', 'sigmoid', 'tanh', 'cross_entropy_loss',
    'ModuleDict', 'ParameterList', 'ParameterDict', 'Conv1d', 'Conv2d', 'MaxPool1d',
    'MaxPool2d', 'AvgPool1d', 'AvgPool2d', 'AdaptiveAvgPool1d', 'AdaptiveAvgPool2d',
    'LeakyReLU', 'SiLU', 'ELU', 'Mish', 'Hardtanh', 'ReLU6', 'Softplus', 'init',
    'RNNBase', 'RNN', 'LSTM', 'GRU', 'RNNCellBase', 'RNNCell', 'LSTMCell', 'GRUCell',
    'MultiheadAttention', 'TransformerEncoderLayer', 'TransformerEncoder',
    'TransformerDecoderLayer', 'TransformerDecoder', 'Transformer',
]

# The seeds' names (gt.nn.cross_entropy_loss, gt.nn.relu, ...) beside torch's.
cross_entropy_loss = cross_entropy
