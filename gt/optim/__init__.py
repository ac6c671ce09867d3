"""Optimizers and learning-rate schedules with torch.optim's API, so a PyTorch training
script ports by changing its imports:

    import gt.optim as optim
    optimizer = optim.AdamW(model.parameters(), lr=3e-4)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=100)
"""

from gt.optim import lr_scheduler, swa_utils
from gt.optim.adadelta import Adadelta
from gt.optim.adafactor import Adafactor
from gt.optim.adagrad import Adagrad
from gt.optim.adam import Adam, AdamW
from gt.optim.adamax import Adamax
from gt.optim.asgd import ASGD
from gt.optim.lbfgs import LBFGS
from gt.optim.nadam import NAdam
from gt.optim.optimizer import Optimizer
from gt.optim.radam import RAdam
from gt.optim.rmsprop import RMSprop
from gt.optim.rprop import Rprop
from gt.optim.sgd import SGD

__all__ = ['Optimizer', 'SGD', 'Adam', 'AdamW', 'RMSprop', 'Adagrad', 'Adadelta', 'Adamax',
           'ASGD', 'NAdam', 'RAdam', 'Rprop', 'LBFGS', 'Adafactor', 'lr_scheduler', 'swa_utils']
