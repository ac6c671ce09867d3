"""Batch normalization: `F.batch_norm` and `BatchNorm1d/2d/3d`.

torch's batch_norm updates the running statistics it is given in place, as a side effect.
Run by name on a worker, that update would write into a value GT treats as immutable
(and may share with other tensors). Here the update is GT's own: the running tensors are
rebound to their new values (as `t.copy_(...)` does), so it is recorded like any op and
happens even if the output is never used.

Training on a cluster of one worker runs torch's kernels (gt/ir/ops/batch_norm.py), with
torch's values, statistics and gradients; evaluation there runs torch's kernel by name,
with GT's ops for its gradients (`_Evaluated`). Otherwise batch norm is composed of GT ops,
whose gradients come from the ops' rules: their reductions shard, so a batch sharded
over several workers is normalized by the whole batch's statistics, as on one device,
where torch's kernel, a node without a sharding rule, would gather the batch first.
"""

from typing import Any

import torch

from gt.autograd import no_grad
from gt.autograd_function import Function
from gt.creation import ones, tensor, zeros
from gt.fallback import call, gt_operands
from gt.ir.invalid_op import InvalidOpError
from gt.nn import init
from gt.nn.module import Module
from gt.nn.parameter import Parameter
from gt.tensor import Tensor, emit


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: Any = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel (dim 1) over the other dims. Training uses the batch's
    statistics and moves the running ones toward them by `momentum` (a number, or for a
    cumulative average the 0-d int64 count of batches seen, whose inverse it is, as the
    module's `momentum=None` passes it); evaluation uses the running ones."""
    input, running_mean, running_var, weight, bias = gt_operands(
        input, running_mean, running_var, weight, bias)
    if input.ndim < 2:
        raise InvalidOpError(f'batch_norm: expected an input of at least 2 dims (N, C, ...), got '
                         f'shape {list(input.shape)}')
    channels = input.shape[1]
    for name, value in (('weight', weight), ('bias', bias), ('running_mean', running_mean),
                        ('running_var', running_var)):
        if value is not None and tuple(value.shape) != (channels,):
            raise InvalidOpError(f'batch_norm: {name} should have shape [{channels}] for an input '
                             f'with {channels} channels, got {list(value.shape)}')
    dims = [0, *range(2, input.ndim)]
    shape = [1, channels] + [1] * (input.ndim - 2)
    if training:
        count = input.numel() // channels if channels else 0
        if count <= 1:
            raise ValueError(f'Expected more than 1 value per channel when training, got '
                             f'input size {torch.Size(input.shape)}')
        if _kernel_applies(input, running_mean, running_var, weight, bias, momentum):
            return _torch_kernel(input, running_mean, running_var, weight, bias, momentum, eps)
        if _is_count(momentum):
            momentum = 1.0 / momentum.to(input.dtype if running_mean is None
                                         else running_mean.dtype)
        mean = input.mean(dims)
        # The mean of squared deviations, not `var`: a mean of a sharded batch is partial
        # sums, where var has no sharding rule and gathers the batch.
        centered = input - mean.reshape(shape)
        var = (centered * centered).mean(dims)
        with no_grad():
            if running_mean is not None:
                running_mean.copy_(running_mean * (1 - momentum) + mean * momentum)
            if running_var is not None:
                unbiased = var * (count / (count - 1))
                running_var.copy_(running_var * (1 - momentum) + unbiased * momentum)
    else:
        if running_mean is None or running_var is None:
            raise ValueError('batch_norm: running_mean and running_var must be given when '
                             'not training')
        if _inference_kernel_applies(input, running_mean, running_var, weight, bias):
            return _Evaluated.apply(input, running_mean, running_var, weight, bias, eps)
        mean, var = running_mean, running_var
        centered = input - mean.reshape(shape)
    output = centered * (var.reshape(shape) + eps).rsqrt()
    if weight is not None:
        output = output * weight.reshape(shape)
    if bias is not None:
        output = output + bias.reshape(shape)
    return output if output.dtype == input.dtype else output.to(input.dtype)


def _inference_kernel_applies(input: Tensor, *tensors: Any) -> bool:
    """Whether evaluation runs torch's kernel by name, for its bits (GT's ops round
    otherwise: a DCGAN generator's eval output differed in 784 of 1024 elements): one
    worker, and every tensor of the input's dtype."""
    return (input._client.single_worker
            and all(t.dtype == input.dtype for t in tensors if t is not None))


class _Evaluated(Function):
    """Evaluation-mode batch norm: torch's kernel by name for the output, GT's ops for
    the gradients (by name, torch's autograd would differentiate the running statistics
    too): the input's is `g * weight / sqrt(var + eps)`, the weight's and bias's sums
    over the channel's elements. They differentiate again."""

    @staticmethod
    def forward(ctx: Any, input: Tensor, mean: Tensor, var: Tensor, weight: Tensor | None,
                bias: Tensor | None, eps: float) -> Tensor:
        ctx.save_for_backward(input, mean, var, weight)
        ctx.eps = eps
        return call('torch.nn.functional.batch_norm',
                    (input, mean, var, weight, bias, False, 0.0, eps), {})

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        input, mean, var, weight = ctx.saved_tensors
        shape = [1, input.shape[1]] + [1] * (input.ndim - 2)
        dims = [0, *range(2, input.ndim)]
        invstd = (var + ctx.eps).rsqrt().reshape(shape)
        wants_input, _, _, wants_weight, wants_bias, _ = ctx.needs_input_grad
        grad_input = grad_weight = grad_bias = None
        if wants_input:
            grad_input = grad * invstd if weight is None else grad * invstd * weight.reshape(shape)
        if wants_weight:
            grad_weight = (grad * (input - mean.reshape(shape)) * invstd).sum(dims)
        if wants_bias:
            grad_bias = grad.sum(dims)
        return grad_input, None, None, grad_weight, grad_bias, None


def _kernel_applies(input: Tensor, *tensors: Any) -> bool:
    """Whether training takes torch's kernels: one worker (nothing to shard), every
    tensor given of the input's dtype (a missing one stands in as below), and a number
    for the momentum."""
    *given, momentum = tensors
    return (input._client.single_worker
            and (isinstance(momentum, (int, float)) or _is_count(momentum))
            and all(t is None or isinstance(t, Tensor) and t.dtype == input.dtype
                    for t in given))


def _is_count(momentum: Any) -> bool:
    """Whether `momentum` is a count of batches (`momentum=None`: 1 / the count)."""
    return isinstance(momentum, Tensor) and momentum.dtype == torch.int64


def _torch_kernel(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                  weight: Tensor | None, bias: Tensor | None, momentum: float,
                  eps: float) -> Tensor:
    """A missing weight is ones and a missing bias zeros, which the kernel's arithmetic
    gives the bits of none (`affine=False`); missing running statistics are made and
    their updates dropped (`track_running_stats=False`)."""
    channels = (input.shape[1],)
    with no_grad():
        stand_ins = [ones(channels, dtype=input.dtype) if weight is None else weight,
                     zeros(channels, dtype=input.dtype) if bias is None else bias,
                     zeros(channels, dtype=input.dtype) if running_mean is None else running_mean,
                     ones(channels, dtype=input.dtype) if running_var is None else running_var]
        if _is_count(momentum):
            output, mean, invstd, new_mean, new_var = emit(
                'batch_norm_train_counted', input, *stand_ins, momentum, eps=float(eps))
        else:
            output, mean, invstd, new_mean, new_var = emit(
                'batch_norm_train', input, *stand_ins, momentum=float(momentum), eps=float(eps))
        if running_mean is not None:
            running_mean.copy_(new_mean)
        if running_var is not None:
            running_var.copy_(new_var)
    weight, bias = stand_ins[:2]
    if not any(t.requires_grad for t in (input, weight, bias)):
        return output
    return emit('batch_normed', input, weight, bias, output, mean, invstd, eps=float(eps))


class _NormBase(Module):
    """torch's _NormBase, of batch and instance norm: parameters `weight` (ones) and `bias`
    (zeros), buffers `running_mean`, `running_var` and `num_batches_tracked`, under
    torch's names."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        floating = {} if dtype is None else {'dtype': dtype}
        self.register_parameter('weight', Parameter(ones(num_features, **floating))
                                if affine else None)
        self.register_parameter('bias', Parameter(zeros(num_features, **floating))
                                if affine and bias else None)
        if track_running_stats:
            self.register_buffer('running_mean', zeros(num_features, **floating))
            self.register_buffer('running_var', ones(num_features, **floating))
            self.register_buffer('num_batches_tracked', tensor(0, dtype=torch.long))
        else:
            for name in ('running_mean', 'running_var', 'num_batches_tracked'):
                self.register_buffer(name, None)

    _version = 2  # the version that added num_batches_tracked

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict,
                              strict: bool, *problems: list) -> None:
        """A state saved before version 2, or without versions (a plain dict), may lack
        num_batches_tracked: the module keeps its own, as torch's does."""
        version = local_metadata.get('version')
        key = prefix + 'num_batches_tracked'
        if (version is None or version < 2) and self.track_running_stats \
                and key not in state_dict:
            state_dict[key] = self.num_batches_tracked if self.num_batches_tracked is not None \
                else torch.tensor(0, dtype=torch.long)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, *problems)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1.0)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def extra_repr(self) -> str:
        return (f'{self.num_features}, eps={self.eps}, momentum={self.momentum}, '
                f'affine={self.affine}, bias={self.bias is not None}, '
                f'track_running_stats={self.track_running_stats}')


class _BatchNorm(_NormBase):
    """Normalizes by the batch's statistics in training (moving the running ones toward
    them), by the running ones in evaluation."""

    dims: tuple[int, ...] = ()

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in self.dims:
            raise ValueError(f'expected {" or ".join(f"{d}D" for d in self.dims)} input '
                             f'(got {input.ndim}D input)')
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked += 1
                if self.momentum is None:  # a cumulative average: 1/batches seen so far
                    momentum = self.num_batches_tracked
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return batch_norm(input, self.running_mean if keep else None,
                          self.running_var if keep else None, self.weight, self.bias,
                          use_batch, momentum, self.eps)


class BatchNorm1d(_BatchNorm):
    dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    dims = (4,)


class BatchNorm3d(_BatchNorm):
    dims = (5,)


class SyncBatchNorm(_BatchNorm):
    """torch's batch norm across processes. A GT batch is one tensor, however its rows
    are spread over workers, so its statistics are always the whole batch's: this is
    batch norm of any rank, and `process_group` has nothing to choose."""

    dims = (2, 3, 4, 5)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 process_group: Any = None, device: Any = None, dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype)
        self.process_group = process_group

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """`module` with each batch norm in it replaced by a SyncBatchNorm holding the
        same parameters and buffers, as torch converts them."""
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group)
            for registry in ('_parameters', '_buffers'):
                getattr(converted, registry).update(getattr(module, registry))
            converted.train(module.training)
            return converted
        for name, child in list(module.named_children()):
            module.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return module
