"""Learning-rate schedules with torch.optim.lr_scheduler's API and semantics: the same
optimizer, schedule and steps give the same rates, as Python floats in the optimizer's
parameter groups."""

from gt.optim.lr_scheduler.combined import ChainedScheduler, SequentialLR
from gt.optim.lr_scheduler.cyclic import CosineAnnealingWarmRestarts, CyclicLR
from gt.optim.lr_scheduler.one_cycle import OneCycleLR
from gt.optim.lr_scheduler.plateau import ReduceLROnPlateau
from gt.optim.lr_scheduler.scheduler import LRScheduler
from gt.optim.lr_scheduler.schedules import (
    ConstantLR,
    CosineAnnealingLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)

_LRScheduler = LRScheduler  # torch's old name

__all__ = ['LRScheduler', 'LambdaLR', 'MultiplicativeLR', 'StepLR', 'MultiStepLR',
           'ConstantLR', 'LinearLR', 'ExponentialLR', 'PolynomialLR', 'CosineAnnealingLR',
           'SequentialLR', 'ChainedScheduler', 'OneCycleLR', 'ReduceLROnPlateau',
           'CyclicLR', 'CosineAnnealingWarmRestarts']
