"""gt.get_rng_state() and gt.set_rng_state(): saving and restoring where the random draws
are, as torch scripts do for checkpoints, against torch's own generator."""

import io

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import gt
from gt.ir.ops.random_state import STATE_BYTES, unpack


def test_the_workers_state_is_torchs_after_the_same_seed_and_draws():
    for seed, draws in ((1, 3), (7, 1000)):
        gt.manual_seed(seed)
        torch.manual_seed(seed)
        gt.randn(draws)
        torch.randn(draws)
        state = gt.get_rng_state()
        assert state.shape == (STATE_BYTES,) and state.dtype == torch.uint8
        workers, client = unpack(state.numpy())
        assert workers == torch.get_rng_state().numpy().tobytes()
        assert client == torch.get_rng_state().numpy().tobytes()  # seeded alike, not drawn


@pytest.mark.parametrize('draw', [
    lambda: gt.randn(5, 3),
    lambda: gt.randint(0, 100, (20,)),
    lambda: gt.randperm(10),
    lambda: gt.nn.functional.dropout(gt.ones(64), 0.5),
    lambda: gt.rand(600, 500),  # big enough to be sharded over several workers
], ids=['randn', 'randint', 'randperm', 'dropout', 'sharded'])
def test_restoring_a_state_repeats_the_draws_that_followed_it(draw):
    gt.manual_seed(3)
    gt.randn(4)
    state = gt.get_rng_state()
    first = draw().numpy()
    gt.randn(9)  # move on
    gt.set_rng_state(state)
    assert (draw().numpy() == first).all()


def test_a_state_saved_in_a_checkpoint_restores_the_draws_and_the_loader_order():
    gt.manual_seed(5)
    buffer = io.BytesIO()
    torch.save({'rng': gt.get_rng_state()}, buffer)
    loader = DataLoader(TensorDataset(torch.arange(8)), batch_size=8, shuffle=True)
    order, values = next(iter(loader))[0].tolist(), gt.randn(4).tolist()
    gt.randn(3)
    next(iter(loader))
    buffer.seek(0)
    gt.set_rng_state(torch.load(buffer)['rng'])  # a torch tensor, as the file has it
    assert next(iter(loader))[0].tolist() == order and gt.randn(4).tolist() == values


def test_a_wrong_state_is_refused_at_the_users_line_and_nothing_else_is_lost():
    kept = gt.arange(3.0) * 2
    with pytest.raises(ValueError, match='a GT random state has 12288 bytes'):
        gt.set_rng_state(gt.zeros(5, dtype=gt.uint8))
    with pytest.raises(ValueError, match='a state is a 1-D uint8 tensor'):
        gt.set_rng_state(gt.zeros(STATE_BYTES))
    assert kept.tolist() == [0.0, 2.0, 4.0]


def test_fork_rng_seed_and_initial_seed_as_torchs():
    gt.manual_seed(11)
    assert gt.initial_seed() == 11 and gt.random.initial_seed() == 11
    with gt.random.fork_rng():
        inside = gt.randn(3).tolist()
    assert gt.randn(3).tolist() == inside  # the block's draws did not move the state
    chosen = gt.seed()
    assert gt.initial_seed() == chosen
    gt.manual_seed(chosen)
    again = gt.randn(2).tolist()
    gt.random.manual_seed(chosen)
    assert gt.randn(2).tolist() == again


def test_torchs_own_state_from_a_torch_checkpoint_sets_every_draw():
    """A torch checkpoint holds torch.get_rng_state(), torch's one generator: set in GT,
    the workers' draws and this process's shuffles continue as torch's would."""
    torch.manual_seed(5)
    torch.randn(7)
    state = torch.get_rng_state()
    results = []
    for library in (torch, gt):
        library.manual_seed(0)
        library.set_rng_state(state)
        draws = [library.randn(3).tolist(), library.randint(0, 10, (4,)).tolist()]
        library.set_rng_state(state)
        loader = library.utils.data.DataLoader(list(range(6)), batch_size=3, shuffle=True)
        results.append(draws + [next(iter(loader)).tolist()])
    assert results[0] == results[1]


def test_torchs_state_loaded_from_a_checkpoint_by_gt_load_sets_both_generators(tmp_path):
    """A torch checkpoint's `torch.get_rng_state()`, read back by the ported script's
    `torch.load` (gt.load, which makes its tensors GT's)."""
    path = str(tmp_path / 'rng.pt')
    torch.manual_seed(0)
    torch.save({'rng': torch.get_rng_state()}, path)
    expected = torch.randn(3)
    gt.set_rng_state(gt.load(path)['rng'])
    assert gt.randn(3).tolist() == expected.tolist()
    assert gt.cuda.is_bf16_supported() is False  # as torch answers without CUDA


def test_a_seeded_generators_draw_from_probabilities_that_require_grad_is_torchs():
    """REINFORCE samples actions from a policy's probabilities with a seeded Generator and
    differentiates their log-probabilities: GT refused the draw (multinomial's result is
    an index, with no gradient; bernoulli's gradient is zero)."""
    def run(library):
        library.manual_seed(0)
        policy = library.nn.Linear(4, 3)
        generator = torch.Generator().manual_seed(2)
        probabilities = library.softmax(policy(library.randn(5, 4)), -1)
        actions = library.multinomial(probabilities, 1, generator=generator)
        coins = library.bernoulli(probabilities, generator=generator)
        (-library.log(probabilities.gather(1, actions)).mean()).backward()
        return actions.view(-1).tolist(), coins.tolist(), torch.tensor(policy.weight.grad.tolist())

    (actions, coins, grad), (expected_actions, expected_coins, expected_grad) = run(gt), run(torch)
    assert (actions, coins) == (expected_actions, expected_coins)
    torch.testing.assert_close(grad, expected_grad)  # sharded: summed in another order
