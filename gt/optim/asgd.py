"""ASGD (averaged SGD): torch's single-tensor update (`torch.optim.ASGD(foreach=False)`), in
its order of operations. Its step size `eta` and averaging rate `mu` are 0-d float32
tensors in torch, recomputed from the step count and read back as numbers; GT keeps them
on the client as those tensors, so their roundings are torch's."""

from typing import Iterable

import torch

from gt.creation import zeros_like
from gt.optim.failed_steps import keep
from gt.optim.optimizer import (
    Numbers,
    Optimizer,
    add_scaled,
    check_hyperparameters,
    gradients,
    scalar_dtype,
    unsupported,
)


class ASGD(Optimizer):
    number_state = ('step', 'eta', 'mu')

    def __init__(self, params: Iterable, lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_hyperparameters('ASGD', lr=lr, weight_decay=weight_decay)
        unsupported(differentiable=differentiable)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _update(self, group: dict, numbers: Numbers) -> None:
        lr, lambd, alpha, t0 = group['lr'], group['lambd'], group['alpha'], group['t0']
        weight_decay = group['weight_decay']
        for param, grad in gradients(group):
            state = self.state[param]
            if not state:
                state.update(step=0, eta=torch.tensor(lr, dtype=scalar_dtype()),
                             mu=torch.ones((), dtype=scalar_dtype()), ax=zeros_like(param))
            state['step'] += 1
            step = state['step']
            if weight_decay != 0:
                grad = add_scaled(grad, param, numbers('weight_decay', weight_decay, param))
            eta = state['eta'].item()
            param *= numbers('1 - lambd * eta', 1 - lambd * eta, param)
            param._assign(add_scaled(param, grad, numbers('-eta', -eta, param)))
            mu = state['mu'].item()
            if mu != 1:
                ax = state['ax']
                keep(state, 'ax', ax + (param - ax) * numbers('mu', mu, param))
            else:
                keep(state, 'ax', param.clone())
            state['eta'].copy_(torch.as_tensor(lr / ((1 + lambd * lr * step) ** alpha)))
            state['mu'].copy_(torch.as_tensor(1 / max(1, step - t0)))
