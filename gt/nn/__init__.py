"""Neural networks on GT tensors with torch.nn's API: `Module`, containers, layers
(linear, convolution, pooling, normalization, padding, upsampling, dropout, activations,
attention and transformers, recurrent), losses, `init` and `utils`
(gradient clipping), so a PyTorch training script ports by changing its imports.
The optimizers live in `gt.optim`; `gt.nn.SGD` and `gt.nn.optim` still name them.

    from gt.nn import Module, Linear
    import gt.nn.functional as F
"""

from gt.nn import functional, init, optim, utils
from gt.nn.activations import (
    CELU,
    ELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    Mish,
    PReLU,
    ReLU6,
    RReLU,
    SiLU,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanhshrink,
    Threshold,
)
from gt.nn.attention import MultiheadAttention
from gt.nn.batch_norm import BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm
from gt.nn.containers import (
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from gt.nn.conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from gt.nn.distance import CosineSimilarity, PairwiseDistance
from gt.nn.dropout import AlphaDropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout
from gt.nn.embedding_bag import EmbeddingBag
from gt.nn.fold import Fold, Unflatten, Unfold
from gt.nn.fractional_max_pool import FractionalMaxPool2d, FractionalMaxPool3d
from gt.nn.functional import relu, sigmoid, tanh
from gt.nn.layers import (
    GELU,
    Bilinear,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    Linear,
    LogSoftmax,
    ReLU,
    Sigmoid,
    Softmax,
    Tanh,
)
from gt.nn.lazy import (
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
    LazyLinear,
)
from gt.nn.loss_modules import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
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
from gt.nn.normalization import (
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LocalResponseNorm,
    RMSNorm,
)
from gt.nn.optim import SGD, Adam, AdamW, Optimizer
from gt.nn.padding import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from gt.nn.parallel import DataParallel
from gt.nn.parameter import Buffer, Parameter
from gt.nn.pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    LPPool1d,
    LPPool2d,
    LPPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
)
from gt.nn.recurrent import GRU, LSTM, RNN, RNNBase
from gt.nn.recurrent_cells import GRUCell, LSTMCell, RNNCell, RNNCellBase
from gt.nn.sequence_and_ranking_losses import (
    CTCLoss,
    MultiLabelMarginLoss,
    TripletMarginWithDistanceLoss,
)
from gt.nn.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from gt.nn.upsampling import (
    ChannelShuffle,
    PixelShuffle,
    PixelUnshuffle,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)

__all__ = [
    'LazyLinear', 'LazyConv1d', 'LazyConv2d', 'LazyConv3d', 'LazyConvTranspose1d',
    'LazyConvTranspose2d', 'LazyConvTranspose3d', 'LazyBatchNorm1d', 'LazyBatchNorm2d',
    'LazyBatchNorm3d', 'LazyInstanceNorm1d', 'LazyInstanceNorm2d', 'LazyInstanceNorm3d',
    'Module', 'Parameter', 'Buffer', 'DataParallel', 'Sequential', 'ModuleList', 'Linear',
    'Embedding', 'LayerNorm',
    'BatchNorm1d', 'BatchNorm2d', 'BatchNorm3d', 'SyncBatchNorm',
    'Dropout', 'ReLU', 'Sigmoid', 'Tanh', 'GELU', 'Softmax', 'LogSoftmax', 'Flatten',
    'Identity', 'MSELoss', 'L1Loss', 'BCELoss', 'BCEWithLogitsLoss', 'NLLLoss',
    'CrossEntropyLoss', 'mse_loss', 'l1_loss', 'binary_cross_entropy',
    'binary_cross_entropy_with_logits', 'cross_entropy', 'nll_loss', 'Optimizer', 'SGD', 'Adam',
    'AdamW', 'functional', 'optim', 'utils', 'relu', 'sigmoid', 'tanh', 'cross_entropy_loss',
    'ModuleDict', 'ParameterList', 'ParameterDict', 'Conv1d', 'Conv2d', 'MaxPool1d',
    'MaxPool2d', 'FractionalMaxPool2d', 'FractionalMaxPool3d', 'AvgPool1d', 'AvgPool2d',
    'AdaptiveAvgPool1d', 'AdaptiveAvgPool2d',
    'LeakyReLU', 'RReLU', 'SiLU', 'ELU', 'Mish', 'Hardtanh', 'ReLU6', 'Softplus', 'init',
    'RNNBase', 'RNN', 'LSTM', 'GRU', 'RNNCellBase', 'RNNCell', 'LSTMCell', 'GRUCell',
    'MultiheadAttention', 'TransformerEncoderLayer', 'TransformerEncoder',
    'TransformerDecoderLayer', 'TransformerDecoder', 'Transformer',
    'GroupNorm', 'InstanceNorm1d', 'InstanceNorm2d', 'InstanceNorm3d', 'RMSNorm',
    'LocalResponseNorm', 'Conv3d', 'ConvTranspose1d', 'ConvTranspose2d', 'ConvTranspose3d',
    'MaxPool3d', 'AvgPool3d', 'AdaptiveAvgPool3d', 'AdaptiveMaxPool1d', 'AdaptiveMaxPool2d',
    'AdaptiveMaxPool3d', 'Upsample', 'UpsamplingNearest2d', 'UpsamplingBilinear2d',
    'PixelShuffle', 'PixelUnshuffle', 'ZeroPad1d', 'ZeroPad2d', 'ZeroPad3d', 'ConstantPad1d',
    'ConstantPad2d', 'ConstantPad3d', 'ReflectionPad1d', 'ReflectionPad2d', 'ReflectionPad3d',
    'ReplicationPad1d', 'ReplicationPad2d', 'ReplicationPad3d', 'CircularPad1d',
    'CircularPad2d', 'CircularPad3d', 'Unflatten', 'Fold', 'Unfold', 'Dropout1d', 'Dropout2d',
    'Dropout3d', 'AlphaDropout', 'FeatureAlphaDropout', 'PReLU', 'Hardswish', 'Hardsigmoid',
    'LogSigmoid', 'Softsign', 'Tanhshrink', 'Softmin', 'Softmax2d', 'GLU', 'CELU', 'SELU',
    'Threshold', 'Hardshrink', 'Softshrink', 'SmoothL1Loss', 'HuberLoss', 'KLDivLoss',
    'CosineEmbeddingLoss', 'MarginRankingLoss', 'TripletMarginLoss', 'HingeEmbeddingLoss',
    'SoftMarginLoss', 'MultiLabelSoftMarginLoss', 'MultiMarginLoss', 'PoissonNLLLoss',
    'GaussianNLLLoss', 'Bilinear', 'EmbeddingBag', 'CosineSimilarity', 'PairwiseDistance',
    'CTCLoss', 'MultiLabelMarginLoss', 'TripletMarginWithDistanceLoss', 'MaxUnpool1d',
    'MaxUnpool2d', 'MaxUnpool3d', 'LPPool1d', 'LPPool2d', 'LPPool3d', 'ChannelShuffle',
]

from gt.nn import modules as modules  # noqa: E402 (mirrors the classes imported above)

# The seeds' names (gt.nn.cross_entropy_loss, gt.nn.relu, ...) beside torch's.
cross_entropy_loss = cross_entropy
