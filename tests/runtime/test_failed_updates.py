"""A step that fails on a worker leaves the tensors it would have updated in place as
they were (gt.runtime.reverts), as torch's raising at the failing op does: a script that
catches the error trains on, against the same script on torch that skips the batch."""

import contextlib

import pytest
import torch
from gt_test_support import Cluster, connected, submit_message

import gt
from gt import ShardConfig, SignalConfig
from gt.runtime.protocol import Fetched, Goodbye, Hello, Welcome
from gt.runtime.transport import dealer, receive, send

BAD_STEP = 2


def batches(steps: int, bad_step: int | None = BAD_STEP) -> list:
    """Inputs and class targets; the one at `bad_step` names a class out of range."""
    generator = torch.Generator().manual_seed(3)
    made = []
    for step in range(steps):
        targets = torch.randint(0, 3, (8,), generator=generator)
        if step == bad_step:
            targets[5] = 7
        made.append((torch.randn(8, 4, generator=generator), targets))
    return made


OPTIMIZERS = {
    # Adam's second moment is rebound twice a step; its step count is the client's.
    'adam': lambda library, params: library.optim.Adam(params, lr=0.05),
    # SGD makes its momentum buffer at the first step (dampening: only later steps damp).
    'sgd': lambda library, params: library.optim.SGD(params, lr=0.1, momentum=0.9,
                                                     dampening=0.5),
}


def models(optimizer: str = 'adam') -> tuple:
    """The same model, optimizer and running statistics, in torch and in GT."""
    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Linear(4, 6, bias=False),
                                    torch.nn.BatchNorm1d(6),
                                    torch.nn.ReLU(), torch.nn.Linear(6, 3))
    ported = gt.nn.Sequential(gt.nn.Linear(4, 6, bias=False), gt.nn.BatchNorm1d(6),
                              gt.nn.ReLU(), gt.nn.Linear(6, 3))
    ported.load_state_dict(reference.state_dict())
    return (reference, OPTIMIZERS[optimizer](torch, reference.parameters()),
            ported, OPTIMIZERS[optimizer](gt, ported.parameters()))


def train(library, model, optimizer, data: list, placed=contextlib.nullcontext) -> tuple:
    """Each step in a try, as a script that skips a bad batch (torch raises at the loss,
    GT at the fetch): the losses, None where a step raised, and what each raised. GT's
    batches are made under `placed()` (a signal's context)."""
    losses, errors = [], []
    for inputs, targets in data:
        if library is gt:
            with placed():
                inputs, targets = gt.tensor(inputs), gt.tensor(targets)
        try:
            optimizer.zero_grad()
            loss = library.nn.functional.cross_entropy(model(inputs), targets)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        except IndexError as error:
            losses.append(None)
            errors.append(str(error))
    return losses, errors


def assert_same_losses(got: list, want: list) -> None:
    assert [loss is None for loss in got] == [loss is None for loss in want]
    torch.testing.assert_close(torch.tensor([x for x in got if x is not None]),
                               torch.tensor([x for x in want if x is not None]))


def assert_same_state(reference, ported, reference_optimizer, ported_optimizer,
                      unlike: tuple = ()) -> None:
    """`unlike`: entries GT updates and torch does not (independent of the failure)."""
    for (name, want), got in zip(reference.state_dict().items(), ported.state_dict().values()):
        if name in unlike:
            continue
        torch.testing.assert_close(got.data if isinstance(got, gt.Tensor) else got, want,
                                   msg=lambda text: f"{name}: {text}")
    wanted, got = reference_optimizer.state_dict(), ported_optimizer.state_dict()
    assert wanted['state'].keys() == got['state'].keys()
    for index, state in wanted['state'].items():
        assert state.keys() == got['state'][index].keys()
        for key, value in state.items():
            mine = got['state'][index][key]
            torch.testing.assert_close(mine.data if isinstance(mine, gt.Tensor) else mine,
                                       value, msg=lambda text: f'{index} {key}: {text}')


@pytest.mark.time_limit(90)
@pytest.mark.parametrize('optimizer, bad_step', [('adam', BAD_STEP), ('sgd', 0)])
def test_a_script_that_catches_a_failed_step_trains_on_as_torchs_does(cluster, optimizer,
                                                                     bad_step):
    """The step count and the state a failed first step made are the client's: they go
    back too, so the next step counts and makes them as torch's does."""
    data = batches(6, bad_step)
    reference, reference_optimizer, ported, ported_optimizer = models(optimizer)
    want, _ = train(torch, reference, reference_optimizer, data)
    with connected(cluster.address):
        ported, ported_optimizer = models(optimizer)[2:]
        got, errors = train(gt, ported, ported_optimizer, data)
        assert len(errors) == 1 and 'out of bounds' in errors[0], errors
        assert_same_losses(got, want)
        assert_same_state(reference, ported, reference_optimizer, ported_optimizer)


@pytest.mark.time_limit(90)
def test_a_failure_between_fetches_undoes_only_its_own_steps_updates(cluster):
    """Fetching once at the end: the steps after the failed one ran on the values from
    before it, so the model equals torch's that skipped the bad batch, and the error
    reaches the script at that fetch. (SGD: the steps between would have counted on
    Adam's step count, which the client learns of only at the fetch.)"""
    data = batches(5)
    reference, reference_optimizer, ported, ported_optimizer = models('sgd')
    train(torch, reference, reference_optimizer, data)
    with connected(cluster.address):
        ported, ported_optimizer = models('sgd')[2:]
        for inputs, targets in data:
            ported_optimizer.zero_grad()
            loss = gt.nn.functional.cross_entropy(ported(gt.tensor(inputs)), gt.tensor(targets))
            loss.backward()
            ported_optimizer.step()
        with pytest.raises(IndexError, match='out of bounds'):
            loss.item()
        loss.item()  # reported once: the last step's loss is a good value
        assert_same_state(reference, ported, reference_optimizer, ported_optimizer)


def accumulate(library, model, optimizer, data: list, every: int = 3) -> list:
    """Gradients of `every` micro-batches summed before each step, each micro-batch in a
    try, as a script that skips a bad one: the losses, None where one raised."""
    losses = []
    for index, (inputs, targets) in enumerate(data):
        if library is gt:
            inputs, targets = gt.tensor(inputs), gt.tensor(targets)
        try:
            loss = library.nn.functional.cross_entropy(model(inputs), targets) / every
            loss.backward()
            losses.append(loss.item())
        except IndexError:
            losses.append(None)
        if index % every == every - 1:
            optimizer.step()
            optimizer.zero_grad()
    return losses


@pytest.mark.time_limit(90)
@pytest.mark.parametrize('bad_step', [1, 3], ids=['after the first micro-batch',
                                                   'the first micro-batch'])
def test_a_failed_micro_batch_keeps_the_gradients_summed_before_it(cluster, bad_step):
    """Torch raises before the failed micro-batch's backward, so the leaves keep the sum
    of the micro-batches before it; GT's accumulation into them goes back (it had
    dropped the gradients, and the step took the later micro-batches' alone)."""
    data = batches(6, bad_step)
    reference, reference_optimizer, ported, ported_optimizer = models('sgd')
    want = accumulate(torch, reference, reference_optimizer, data)
    with connected(cluster.address):
        ported, ported_optimizer = models('sgd')[2:]
        got = accumulate(gt, ported, ported_optimizer, data)
        assert_same_losses(got, want)
        assert_same_state(reference, ported, reference_optimizer, ported_optimizer)


def embedding_models(optimizer: str) -> tuple:
    """An embedding before batch norm (an index out of range fails the running
    statistics too), with an optimizer that makes its state when made (Adagrad) or one
    resumed from a checkpoint of torch's (Adam), in torch and in GT."""
    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.Flatten(),
                                    torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 3))
    reference_optimizer = (torch.optim.Adagrad(reference.parameters(), lr=0.1)
                           if optimizer == 'adagrad' else
                           torch.optim.Adam(reference.parameters(), lr=0.05))
    if optimizer == 'adam, resumed':
        for param in reference.parameters():
            param.grad = torch.ones_like(param)
        reference_optimizer.step()
        reference_optimizer.zero_grad()
    ported = gt.nn.Sequential(gt.nn.Embedding(10, 4), gt.nn.Flatten(), gt.nn.BatchNorm1d(8),
                              gt.nn.Linear(8, 3))
    ported.load_state_dict(reference.state_dict())
    ported_optimizer = (gt.optim.Adagrad(ported.parameters(), lr=0.1)
                        if optimizer == 'adagrad' else
                        gt.optim.Adam(ported.parameters(), lr=0.05))
    ported_optimizer.load_state_dict(reference_optimizer.state_dict())
    return reference, reference_optimizer, ported, ported_optimizer


@pytest.mark.time_limit(90)
@pytest.mark.parametrize('optimizer', ['adagrad', 'adam, resumed'])
@pytest.mark.parametrize('zero_grad_last', [False, True], ids=['zero_grad first',
                                                               'zero_grad last'])
def test_a_failed_first_step_in_the_message_that_made_the_model(cluster, optimizer,
                                                                 zero_grad_last):
    """The model, its running statistics and the optimizer's state (made when it was,
    or loaded) are made in the first step's message: a first step that fails goes back
    to them. Zeroing the gradients after fetching the loss (which raises first): the
    failed step's gradients are dropped, as torch's backward that raised left none."""
    generator = torch.Generator().manual_seed(2)
    data = [(torch.randint(0, 10, (8, 2), generator=generator),
             torch.randint(0, 3, (8,), generator=generator)) for _ in range(4)]
    data[0][0][3, 1] = 11  # an embedding index out of range
    reference, reference_optimizer, _, _ = embedding_models(optimizer)
    with connected(cluster.address):
        _, _, ported, ported_optimizer = embedding_models(optimizer)
        for library, model, step_with in ((torch, reference, reference_optimizer),
                                          (gt, ported, ported_optimizer)):
            for inputs, targets in data:
                try:
                    if not zero_grad_last:
                        step_with.zero_grad()
                    if library is gt:
                        inputs, targets = gt.tensor(inputs), gt.tensor(targets)
                    loss = library.nn.functional.cross_entropy(model(inputs), targets)
                    loss.backward()
                    step_with.step()
                    loss.item()
                    if zero_grad_last:
                        step_with.zero_grad()
                except IndexError:
                    pass
        # The failed batch's count: its increment does not depend on the failure.
        assert_same_state(reference, ported, reference_optimizer, ported_optimizer,
                          unlike=('2.num_batches_tracked',))


@pytest.mark.time_limit(60)
def test_a_grad_scaler_trains_on_after_a_failed_step(cluster):
    """torch raises before the scaler sees the step; GT raises at the scaler's fetch of
    its inf check, after which the optimizer's next step starts afresh."""
    data = batches(4, bad_step=1)
    reference, reference_optimizer, _, _ = models('sgd')
    with connected(cluster.address):
        _, _, ported, ported_optimizer = models('sgd')
        for library, model, step_with in ((torch, reference, reference_optimizer),
                                          (gt, ported, ported_optimizer)):
            scaler = library.amp.GradScaler('cpu', init_scale=4.0)
            for inputs, targets in data:
                try:
                    step_with.zero_grad()
                    if library is gt:
                        inputs, targets = gt.tensor(inputs), gt.tensor(targets)
                    loss = library.nn.functional.cross_entropy(model(inputs), targets)
                    scaler.scale(loss).backward()
                    scaler.step(step_with)
                    scaler.update()
                    loss.item()
                except IndexError:
                    pass
            assert scaler.get_scale() == 4.0
        assert_same_state(reference, ported, reference_optimizer, ported_optimizer)


@pytest.mark.time_limit(60)
def test_only_updates_computed_from_the_failure_are_undone(cluster):
    """Rebinding through views and in-place ops: what depends on the failed value keeps
    its value, what does not is updated (torch would have stopped at the failing op)."""
    with connected(cluster.address):
        weights = gt.arange(6.0).reshape(2, 3)
        counter = gt.zeros(())
        gt.sync()  # made in an earlier message: a value made and replaced in one has no
        # old value on the worker to go back to
        failed = gt.arange(3.0)[gt.tensor([0, 9])].sum()  # index 9 out of range
        weights[0] += failed
        weights.mul_(2).add_(failed)  # a chain within one flush
        counter += 1
        with pytest.raises(IndexError, match='out of bounds'):
            weights.sum().item()
        torch.testing.assert_close(weights.data, torch.arange(6.0).reshape(2, 3))
        assert counter.item() == 1
        weights.mul_(2)  # and the tensor goes on from there
        torch.testing.assert_close(weights.data, torch.arange(6.0).reshape(2, 3) * 2)


@pytest.mark.time_limit(60)
def test_an_update_that_reads_a_failure_told_before_raises_it_again(cluster):
    """A value the failed step left behind (not an optimizer's state) fails every update
    that reads it: each goes back, and each fetch after says why, never in silence."""
    with connected(cluster.address):
        weights = gt.ones(3)
        gt.sync()
        left_behind = gt.arange(3.0)[gt.tensor([0, 1, 9])] * 2
        for _ in range(3):
            weights.add_(left_behind)
            with pytest.raises(IndexError, match='out of bounds'):
                weights.sum().item()
        torch.testing.assert_close(weights.data, torch.ones(3))


@pytest.mark.time_limit(90)
@pytest.mark.usefixtures('fresh_configs')
def test_data_parallel_replicas_go_back_together(cluster):
    """The bad target on one worker's half of the batch: the replicated parameters, the
    optimizer's state and the running statistics go back on both workers, and the next
    steps, which read each worker's copy, match torch's."""
    gt.register_config('batch', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1])))
    data = batches(5)
    reference, reference_optimizer, ported, ported_optimizer = models()
    want, _ = train(torch, reference, reference_optimizer, data)
    with connected(cluster.address):
        ported, ported_optimizer = models()[2:]
        got, _ = train(gt, ported, ported_optimizer, data,
                       placed=lambda: gt.signal.context('batch'))
        assert_same_losses(got, want)
        assert_same_state(reference, ported, reference_optimizer, ported_optimizer)


@pytest.mark.time_limit(120)
def test_a_step_past_the_memory_limit_leaves_the_model_as_it_was():
    """A fragment the server refuses (the session's memory limit) made none of its
    values: the tensors it rebound keep what they held, so a script that catches the
    OutOfMemoryError, as torch scripts catch CUDA's, trains on with a smaller batch; its
    Adam step count, the client's, does not count the refused step."""
    data = batches(4, bad_step=None)
    reference, reference_optimizer, _, _ = models()
    train(torch, reference, reference_optimizer, data)
    limited = Cluster(workers=1, server_args=['--session-memory-limit', '4M'])
    try:
        limited.wait_ready()
        with connected(limited.address):
            ported, ported_optimizer = models()[2:]
            refused = 0
            for step, (inputs, targets) in enumerate(data):
                try:
                    if step == BAD_STEP:  # 8 MB of inputs, held: past the limit
                        inputs, targets = inputs.repeat(65536, 1), targets.repeat(65536)
                    held = gt.tensor(inputs), gt.tensor(targets)
                    ported_optimizer.zero_grad()
                    loss = gt.nn.functional.cross_entropy(ported(held[0]), held[1])
                    loss.backward()
                    ported_optimizer.step()
                    loss.item()
                except gt.OutOfMemoryError:
                    assert step == BAD_STEP
                    refused += 1
                    data.insert(step + 1, (inputs[:8], targets[:8]))  # the batch again
            assert refused == 1
            assert_same_state(reference, ported, reference_optimizer, ported_optimizer)
    finally:
        limited.stop()


def reply_of(socket, kind: type) -> object:
    """The next `kind` message on `socket` (others skipped), within 15 s."""
    for _ in range(150):
        if socket.poll(100):
            message, _ = receive(socket)
            if isinstance(message, kind):
                return message
    pytest.fail(f'no {kind.__name__} within 15 s')


@pytest.mark.parametrize('fields', [
    {'reverts': [5]}, {'reverts': ['a', 'b']}, {'reverts': [[1], 2]}, {'releases': [[1]]},
    {'releases': {'a': 1}}, {'reverts': [1, 2], 'structure': b'junk'},
    {'releases': [[1]], 'structure': b'junk'}, {'reverts': [[1], [2]], 'structure': b'junk'},
    {'reverts': [3], 'structure': b'junk'},
], ids=['odd', 'strings', 'unhashable', 'unhashable release', 'a map', 'refused',
        'refused, unhashable release', 'refused, unhashable pair', 'refused, odd'])
@pytest.mark.time_limit(60)
def test_malformed_releases_and_reverts_fail_the_request_not_the_server(cluster, fields):
    """What a client sends of the values it let go and rebound is checked: garbage there,
    in a fragment refused or not, is that request's error, and others go on."""
    stranger = dealer(cluster.endpoint)
    try:
        send(stranger, Hello('tests:bad-reverts', 1, ''))
        reply_of(stranger, Welcome)
        send(stranger, submit_message(fetch=[0], request=1, **fields))
        assert reply_of(stranger, Fetched).errors
        send(stranger, Goodbye())
    finally:
        stranger.close(linger=1000)
    assert cluster.server.poll() is None, cluster.logs()
    with connected(cluster.address):
        assert gt.ones(4, 4).sum().item() == 16.0
