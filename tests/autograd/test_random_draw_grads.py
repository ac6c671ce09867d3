"""Random torch functions run by name on tensors that require grad, as sampling code
calls them: integer samples and `_like` draws carry no gradient, and normal, bernoulli
and poisson give their inputs torch's gradient, zeros. All raised NotImplementedError
(found porting a policy-gradient script)."""

import numpy as np
import pytest
import torch

import gt


def reinforce_step(library) -> tuple:
    """A policy samples actions from probabilities that require grad, then learns from
    the log-probabilities of what it sampled."""
    library.manual_seed(0)
    policy = library.nn.Linear(4, 3)
    optimizer = library.optim.SGD(policy.parameters(), lr=0.1)
    states = library.from_numpy(
        torch.randn(6, 4, generator=torch.Generator().manual_seed(1)).numpy())
    probabilities = library.nn.functional.softmax(policy(states), dim=-1)
    actions = library.multinomial(probabilities, 1)
    again = probabilities.multinomial(2, replacement=True)
    noise = library.randint_like(probabilities, 0, 5) + library.rand_like(probabilities)
    log_probabilities = probabilities.gather(1, actions).log()
    loss = -(log_probabilities * (noise.sum(1, keepdim=True) + again.sum())).mean()
    loss.backward()
    optimizer.step()
    drawn = [actions.tolist(), again.tolist(), noise.tolist(), actions.requires_grad,
             noise.requires_grad]
    return drawn, [loss.item()] + [p.detach().numpy() for p in policy.parameters()]


def test_a_policy_samples_actions_from_probabilities_that_require_grad_as_in_torch():
    (drawn, learned), (expected_drawn, expected_learned) = reinforce_step(gt), reinforce_step(torch)
    assert drawn == expected_drawn
    for got, expected in zip(learned, expected_learned):  # sharded sums round otherwise
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('draw', ['normal', 'bernoulli', 'poisson'])
def test_draws_torch_differentiates_give_zero_gradients(draw):
    def run(library):
        library.manual_seed(3)
        rates = library.full((5,), 0.5, requires_grad=True)
        sample = (library.normal(rates * 2, 1.0) if draw == 'normal'
                  else getattr(library, draw)(rates * 1))
        (sample * rates).sum().backward()
        return sample.tolist(), sample.requires_grad, rates.grad.tolist()
    assert run(gt) == run(torch)


@pytest.mark.parametrize('call', [
    lambda x: gt.dropout(x, 0.5, True),
    lambda x: gt.rrelu(x - 1, training=True),
    lambda x: gt.bernoulli(x, 0.3),
], ids=['dropout', 'rrelu', 'bernoulli_p'])
def test_draws_with_other_gradients_are_refused_not_given_zeros(call):
    """torch's dropout and rrelu have gradients of their own, and bernoulli with `p` none:
    GT raises rather than give zeros."""
    x = gt.full((4,), 0.5, requires_grad=True)
    with pytest.raises(NotImplementedError, match='no gradient for this random'):
        call(x)
