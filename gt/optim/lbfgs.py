"""L-BFGS with torch's algorithm (`torch.optim.LBFGS`), op for op: the flat gradient, the
two-loop recursion and the updates are GT ops; what decides the control flow (the
loss, the gradient's largest entry, the directional derivative, y.s and y.y) is fetched,
a few values in one round trip, and the scalar arithmetic on them (the step length, the
strong-Wolfe line search's interpolation) runs on the client in torch's 0-d tensors, as
torch runs it. So each inner iteration waits on the workers: the closure makes the loss
anyway, and L-BFGS decides from it."""

from typing import Any, Callable, Iterable

import torch

from gt.autograd import enable_grad, no_grad
from gt.creation import zeros
from gt.functional import cat
from gt.optim.optimizer import Numbers, Optimizer, add_scaled
from gt.runtime import client as connection
from gt.tensor import Tensor


def fetch(*tensors: Tensor) -> list[torch.Tensor]:
    """The values of GT tensors, on the client, in one round trip."""
    return connection.current().fetch([tensor._id for tensor in tensors])


def _cubic_interpolate(x1: Any, f1: Any, g1: Any, x2: Any, f2: Any, g2: Any,
                       bounds: tuple | None = None) -> Any:
    """torch's: the minimizer of the cubic through two points and their slopes."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = d2_square.sqrt()
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(evaluate: Callable, t: Any, d: Tensor, f: float, g: Tensor, gtd: Any,
                  c1: float = 1e-4, c2: float = 0.9, tolerance_change: float = 1e-9,
                  max_ls: int = 25) -> tuple:
    """torch's line search (bracketing, then zooming by cubic interpolation) for a step
    length satisfying the strong Wolfe conditions; `evaluate(t)` gives the loss, the flat
    gradient and the directional derivative at step length t."""
    (d_norm,) = fetch(d.abs().max())
    f_new, g_new, gtd_new = evaluate(t)
    evaluations = 1
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    iteration = 0
    while iteration < max_ls:
        if f_new > (f + c1 * t * gtd) or (iteration > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        previous = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = previous, f_new, g_new, gtd_new
        f_new, g_new, gtd_new = evaluate(t)
        evaluations += 1
        iteration += 1
    if iteration == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]
    insufficient_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and iteration < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1],
                               bracket_f[1], bracket_gtd[1])
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insufficient_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        f_new, g_new, gtd_new = evaluate(t)
        evaluations += 1
        iteration += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high] = t, f_new
            bracket_g[high], bracket_gtd[high] = g_new, gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low] = t, f_new
            bracket_g[low], bracket_gtd[low] = g_new, gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evaluations


class LBFGS(Optimizer):
    """L-BFGS over one parameter group; `step(closure)` evaluates the closure (which
    zeroes the gradients, computes the loss and calls backward) up to `max_eval` times."""

    def __init__(self, params: Iterable, lr: float = 1, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        if not 0.0 <= lr:
            raise ValueError(f'invalid LBFGS hyperparameter: lr={lr} (must not be negative)')
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]['params']

    def _gather_flat_grad(self) -> Tensor:
        return cat([zeros(param.numel(), dtype=param.dtype) if param._grad is None
                    else param._grad.reshape(-1) for param in self._params])

    def _add_grad(self, step_size: Any, update: Tensor) -> None:
        """p += step_size * (p's part of update), `p.add_(part, alpha=step_size)`."""
        numbers = Numbers()
        offset = 0
        for param in self._params:
            count = param.numel()
            part = update[offset:offset + count].view_as(param)
            param._assign(add_scaled(param, part, numbers('t', float(step_size), param)))
            offset += count

    def _evaluate(self, closure: Callable, *wanted: Callable[[Tensor], Tensor]) -> tuple:
        """The closure's loss (as it returned it, and as a float), the flat gradient and
        the values `wanted` of it, fetched with the loss in one round trip."""
        with enable_grad():
            loss = closure()
        flat_grad = self._gather_flat_grad()
        values = [function(flat_grad) for function in wanted]
        if isinstance(loss, Tensor):
            value, *values = fetch(loss, *values)
        else:
            value, values = loss, fetch(*values)
        return loss, float(value), flat_grad, values

    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        with no_grad():
            return self._step(closure)

    def _step(self, closure: Callable[[], Any]) -> Any:
        group = self.param_groups[0]
        lr, max_iter, max_eval = group['lr'], group['max_iter'], group['max_eval']
        tolerance_grad, tolerance_change = group['tolerance_grad'], group['tolerance_change']
        line_search_fn, history_size = group['line_search_fn'], group['history_size']
        state = self.state[self._params[0]]
        state.setdefault('func_evals', 0)
        state.setdefault('n_iter', 0)
        _numbers_to_client(state)

        original_loss, loss, flat_grad, (largest, total) = self._evaluate(
            closure, lambda g: g.abs().max(), lambda g: g.abs().sum())
        current_evals = 1
        state['func_evals'] += 1
        if largest <= tolerance_grad:
            return original_loss

        d, t = state.get('d'), state.get('t')
        old_dirs, old_stps, ro = state.get('old_dirs'), state.get('old_stps'), state.get('ro')
        h_diag = state.get('H_diag')
        prev_flat_grad, prev_loss = state.get('prev_flat_grad'), state.get('prev_loss')
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state['n_iter'] += 1
            if state['n_iter'] == 1:
                d = flat_grad.neg()
                old_dirs, old_stps, ro, h_diag = [], [], [], 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * Numbers()('t', float(t), d)
                ys, yy = fetch(y.dot(s), y.dot(y))
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / yy
                d = self._direction(state, flat_grad, old_dirs, old_stps, ro, h_diag)
            prev_flat_grad, prev_loss = flat_grad, loss
            if state['n_iter'] == 1:
                t = min(1.0, 1.0 / total) * lr
            else:
                t = lr
            (gtd,) = fetch(flat_grad.dot(d))
            if gtd > -tolerance_change:
                break

            evaluations = 0
            if line_search_fn is not None:
                if line_search_fn != 'strong_wolfe':
                    raise RuntimeError("only 'strong_wolfe' is supported")
                start = [param.clone() for param in self._params]

                def evaluate(step_length: Any, start: list = start, d: Tensor = d) -> tuple:
                    self._add_grad(step_length, d)
                    _, value, gradient, (slope,) = self._evaluate(closure, lambda g: g.dot(d))
                    for param, initial in zip(self._params, start):
                        param.copy_(initial)
                    return value, gradient, slope

                loss, flat_grad, t, evaluations = _strong_wolfe(
                    evaluate, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                (largest, step_largest) = fetch(flat_grad.abs().max(),
                                                (d * Numbers()('t', float(t), d)).abs().max())
                converged = largest <= tolerance_grad
            else:
                self._add_grad(t, d)
                converged = False
                if n_iter != max_iter:
                    _, loss, flat_grad, (largest,) = self._evaluate(
                        closure, lambda g: g.abs().max())
                    converged = largest <= tolerance_grad
                    evaluations = 1
            current_evals += evaluations
            state['func_evals'] += evaluations

            if n_iter == max_iter or current_evals >= max_eval or converged:
                break
            if line_search_fn is None:
                (step_largest,) = fetch((d * Numbers()('t', float(t), d)).abs().max())
            if step_largest <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return original_loss

    def _direction(self, state: dict, flat_grad: Tensor, old_dirs: list, old_stps: list,
                   ro: list, h_diag: Any) -> Tensor:
        """The two-loop recursion, d = -H g, with the coefficients `al` and `be` as GT 0-d
        tensors (each scales the next update, so none is fetched)."""
        numbers = Numbers()
        if 'al' not in state:
            state['al'] = [None] * self.param_groups[0]['history_size']
        al = state['al']
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * numbers(f'ro {i}', ro[i].item(), q)
            q = add_scaled(q, old_dirs[i], -al[i])
        r = q * numbers('H_diag', float(h_diag), q)
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * numbers(f'ro {i}', ro[i].item(), q)
            r = add_scaled(r, old_stps[i], al[i] - be_i)
        return r


def _numbers_to_client(state: dict) -> None:
    """The numbers the step computes with on the client (t, H_diag, ro), as torch 0-d
    tensors: a loaded state dict brings them as GT tensors; fetched in one round trip."""
    found = [(key, None) for key in ('t', 'H_diag') if isinstance(state.get(key), Tensor)]
    found += [('ro', index) for index, value in enumerate(state.get('ro') or ())
              if isinstance(value, Tensor)]
    if not found:
        return
    values = fetch(*[state[key] if index is None else state[key][index]
                     for key, index in found])
    for (key, index), value in zip(found, values):
        if index is None:
            state[key] = value
        else:
            state[key][index] = value
