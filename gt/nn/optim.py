"""The optimizers' old home, kept so that `gt.nn.SGD` and `gt.nn.optim.Adam` still work:
they live in `gt.optim`."""

from gt.optim import SGD, Adagrad, Adam, AdamW, Optimizer, RMSprop

__all__ = ['Optimizer', 'SGD', 'Adam', 'AdamW', 'RMSprop', 'Adagrad']
