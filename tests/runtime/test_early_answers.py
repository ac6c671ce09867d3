"""A fetched value comes back as soon as it exists (gt.runtime.early_reply), and a value
fetched after every step is asked for with the step's message (gt.runtime.prefetch):
the values are torch's, bit for bit, and a failure of work recorded before the fetch
but not needed by it is raised at the next fetch."""

import pytest
import torch
from gt_test_support import connected

import gt
from gt.runtime import early_reply
from gt.runtime.session_errors import WorkerIndexError

STEPS = 8


def early_answers() -> int:
    return sum(worker['early_answers'] for worker in gt.debug.get_worker_stats())


def train(library, fetch_before_step: bool, synchronize: bool = False) -> tuple[list, list]:
    """An MLP trained for STEPS steps, its loss fetched each step: after `step()` (the
    step's message is gone), or before it (the fetch goes with the step's work)."""
    library.manual_seed(0)
    nn = library.nn
    model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = library.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    generator = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(STEPS):
        x = library.from_numpy(torch.randn(8, 20, generator=generator).numpy())
        y = library.from_numpy(torch.randint(0, 4, (8,), generator=generator).numpy())
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if fetch_before_step:
            losses.append(loss.item())
        optimizer.step()
        optimizer.zero_grad()
        if synchronize:
            library.cuda.synchronize()  # a wait for statistics while the guess is out
        if not fetch_before_step:
            losses.append(loss.item())
    return losses, [parameter.detach().numpy().copy() for parameter in model.parameters()]


@pytest.mark.parametrize('synchronize', [False, True])
@pytest.mark.parametrize('fetch_before_step', [False, True])
def test_a_loss_fetched_every_step_is_torchs_and_answered_before_the_step_ends(
        cluster, fetch_before_step, synchronize):
    with connected(cluster.address):
        before = early_answers()
        losses, parameters = train(gt, fetch_before_step, synchronize)
        answered = early_answers() - before
    expected_losses, expected_parameters = train(torch, fetch_before_step)
    assert losses == expected_losses
    for parameter, expected in zip(parameters, expected_parameters):
        assert (parameter == expected).all()
    # The first runs are interpreted, one checks the thread count; the rest split.
    assert answered >= STEPS // 2, answered


def test_work_that_could_fail_after_the_fetched_value_is_not_answered_early(cluster):
    """A lookup recorded after the loss can fail on its index: the loss waits for it, and
    its failure is raised by the fetch it was recorded before, as without early answers.
    Answered early, the failure came one fetch late, after the next step was recorded
    on the failed one's optimizer state: Adam's next step counted one step too many."""
    def train(library):
        library.manual_seed(0)
        weight = library.nn.Parameter(library.randn(10, 4))
        optimizer = library.optim.Adam([weight], lr=0.1)
        losses = []
        for step in range(8):
            try:
                loss = (weight * weight).sum()
                index = library.tensor([1, 12 if step == 5 else 2, 3])
                total = loss + library.nn.functional.embedding(index, weight).sum()
                optimizer.zero_grad()
                total.backward()
                optimizer.step()
                losses.append(loss.item())
            except IndexError:
                losses.append('IndexError')
        return losses, weight.detach().numpy().copy(), int(optimizer.state[weight]['step'])
    with connected(cluster.address):
        before = early_answers()
        losses, weight, steps = train(gt)
        assert early_answers() == before
    expected_losses, expected_weight, expected_steps = train(torch)
    assert losses == expected_losses and losses[5] == 'IndexError'
    assert (weight == expected_weight).all() and steps == expected_steps == 7


def test_a_hot_step_that_fails_draws_its_random_numbers_once(cluster):
    """A hot program whose fast run fails runs again op by op from its inputs; its
    dropout drew a second mask, and every later draw was one step ahead of torch's."""
    def run(library):
        library.manual_seed(0)
        model = library.nn.Sequential(library.nn.Linear(8, 16), library.nn.Dropout(0.5),
                                      library.nn.Linear(16, 1))
        x, y, one = library.randn(32, 8), library.randn(32, 1), library.tensor([6])
        values = []
        for step in range(8):
            with library.no_grad():
                try:  # torch raises at the division, GT at the fetch
                    loss = library.nn.functional.mse_loss(model(x), y)
                    divisor = one * (0 if step == 5 else 1)
                    total = loss + (((loss * 0).long() + one) // divisor).float().sum()
                    values.append(total.item())
                except RuntimeError:
                    values.append('failed')
        return values, library.rand(1).item()
    with connected(cluster.address):
        got = run(gt)
    assert got == run(torch) and got[0][5] == 'failed'


def test_a_guess_the_script_does_not_take_keeps_its_failure_for_the_next_fetch(cluster):
    """The loss was fetched after each step, so the last step's message asks for it; the
    script fetches another value instead, which raises the step's failure, and a later
    fetch of that loss raises it again (a fetch of a failed value always does)."""
    expected_weight, expected_losses = torch.ones(4, requires_grad=True), []
    expected_optimizer = torch.optim.SGD([expected_weight], lr=0.1)
    for index in range(1, 6):  # torch raises at the lookup of the sixth step
        expected_loss = (expected_weight * torch.arange(10.0)[index]).sum()
        expected_loss.backward()
        expected_optimizer.step()
        expected_optimizer.zero_grad()
        expected_losses.append(expected_loss.item())
    with connected(cluster.address):
        weight = gt.ones(4, requires_grad=True)
        optimizer = gt.optim.SGD([weight], lr=0.1)
        table = gt.arange(10.0)
        losses = []
        for index in [1, 2, 3, 4, 5, 50]:
            position = (weight[:1].detach() * 0 + index).long()
            loss = (weight * table[position]).sum()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if index != 50:
                losses.append(loss.item())
        assert losses == expected_losses
        with pytest.raises(WorkerIndexError, match='index 50 is out of bounds'):
            gt.ones(2).sum().item()
        with pytest.raises(WorkerIndexError, match='index 50 is out of bounds'):
            loss.item()
        # The failed step was undone (gt.runtime.reverts): the weight is the one before it.
        assert torch.equal(torch.from_numpy(weight.detach().numpy()), expected_weight.detach())


def test_a_guess_is_dropped_when_the_script_fetches_something_else(cluster):
    """A loop whose last steps fetch another value: each is right, and the guesses'
    answers, never taken, do not stand in for them."""
    with connected(cluster.address):
        weight = gt.zeros(3)
        values = []
        for step in range(8):
            weight = weight + 1
            total = weight.sum()
            gt.sync()
            values.append(total.item() if step < 5 else weight.tolist())
        assert values == [3.0, 6.0, 9.0, 12.0, 15.0, [6.0] * 3, [7.0] * 3, [8.0] * 3]


@pytest.mark.parametrize('name, fallible', [
    ('torch.linalg.vector_norm', False), ('torch.lstm', False), ('torch.addmm', False),
    ('torch.nn.functional.softplus', False), ('torch.nn.functional.conv2d', False),
    ('Tensor.__getitem__', True), ('torch.index_select', True), ('torch.linalg.cholesky', True),
    ('torch.floor_divide', True), ('torch.nn.functional.one_hot', True),
    ('torch.multinomial', True), ('torch.nn.functional.kl_div', False),
    ('torch.normal', True), ('torch.nn.functional.multi_margin_loss', True)])
def test_torch_functions_run_by_name_that_may_fail_on_values_are_known_by_name(name, fallible):
    """By words, not substrings: `softplus` holds `lu`, `vector_norm` is in linalg (a
    language model's clipped step was never answered early)."""
    assert early_reply._fallible_by_name(name) is fallible


@pytest.mark.parametrize('index_made', ['given', 'computed'])
def test_a_lookup_after_the_fetch_into_a_table_read_before_is_still_checked(cluster, index_made):
    """The table was read by a lookup before the loss, but the index after it is new (or
    made from a valid one by arithmetic): its failure is the fetch's, not the next's."""
    def run(library):
        library.manual_seed(0)
        table = library.randn(10, 4)
        values = []
        with library.no_grad():
            for step in range(8):
                try:
                    good = library.tensor([1, 2, 3])
                    loss = library.nn.functional.embedding(good, table).sum()
                    bad = library.tensor([1, 12 if step == 5 else 2, 3]) \
                        if index_made == 'given' else good + (10 if step == 5 else 0)
                    extra = library.nn.functional.embedding(bad, table).exp().sum() * 2 + 1
                    values.append(loss.item())
                except IndexError:
                    values.append('IndexError')
        return values, float(extra.sum())
    with connected(cluster.address):
        got = run(gt)
    assert got == run(torch) and got[0][5] == 'IndexError'


@pytest.mark.parametrize('fetching', ['loss and accuracy', 'every third step'])
def test_guesses_follow_a_loop_that_fetches_two_values_or_every_few_steps(cluster, fetching):
    """Guessed for one value at the next fragment, the guesses alternated between a
    step's loss and accuracy, and went unused by a loop that logs every third step."""
    def loop(library):
        library.manual_seed(0)
        model = library.nn.Sequential(library.nn.Linear(20, 16), library.nn.ReLU(),
                                      library.nn.Linear(16, 4))
        optimizer = library.optim.SGD(model.parameters(), lr=0.1)
        x, y = library.randn(32, 20), library.randint(0, 4, (32,))
        values = []
        for step in range(STEPS * 3):
            logits = model(x)
            loss = library.nn.functional.cross_entropy(logits, y)
            accuracy = (logits.argmax(1) == y).float().mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if fetching == 'loss and accuracy':
                values.append((loss.item(), accuracy.item()))
            elif step % 3 == 2:
                values.append(loss.item())
        return values
    with connected(cluster.address):
        prefetch = gt.runtime.client.current().prefetch
        before = prefetch.used
        values = loop(gt)
        used = prefetch.used - before
    assert values == loop(torch)
    fetches = len(values) * (2 if fetching == 'loss and accuracy' else 1)
    assert used >= fetches - 6, (used, fetches)
