"""Many clients on one cluster: each gets its own correct results, and a session can name
only its own values."""

import json
import time

import numpy as np
import pytest
import torch
from gt_test_support import connected, finish_script, start_script, submit_message

import gt
from gt.runtime.fragment import encode_structure
from gt.runtime.protocol import Fetched, Goodbye, Hello, Welcome
from gt.runtime.transport import dealer, receive, send

CLIENT = '''
import json, os
import numpy as np
import gt
from gt.runtime import client

gt.connect(os.environ['GT_ADDRESS'])
seed = int(os.environ['SEED'])
gt.manual_seed(seed)
r = gt.randn(8, 5)
gt.manual_seed(seed)
r_again = gt.randn(8, 5)
weights = np.random.default_rng(seed).standard_normal((5, 3)).astype(np.float32)
y = (r @ gt.from_numpy(weights)).relu() * seed + gt.from_numpy(np.arange(3, dtype=np.float32))
total = y.sum(dim=0)
accumulated = gt.zeros(3)
for step in range(100):  # many small flushes, so that the two clients interleave
    accumulated = accumulated + total * (step % 3)
    if step % 10 == 0:
        gt.sync()
print(json.dumps({
    'session': client.current().session, 'r': r.data.tolist(),
    'r_again': r_again.data.tolist(), 'y': y.data.tolist(), 'total': total.data.tolist(),
    'accumulated': accumulated.data.tolist(),
}))
'''


def expected(seed: int, r: list) -> dict:
    r = torch.tensor(r, dtype=torch.float32)
    weights = torch.from_numpy(
        np.random.default_rng(seed).standard_normal((5, 3)).astype(np.float32))
    y = (r @ weights).relu() * seed + torch.arange(3, dtype=torch.float32)
    total = y.sum(dim=0)
    return {'y': y, 'total': total, 'accumulated': total * sum(step % 3 for step in range(100))}


@pytest.mark.time_limit(120)
def test_concurrent_clients_get_their_own_results(cluster):
    seeds = (3, 5)
    scripts = [start_script(CLIENT, env={'GT_ADDRESS': cluster.address, 'SEED': str(seed)})
               for seed in seeds]
    results = [finish_script(script) for script in scripts]
    outputs = []
    for result in results:
        assert result.returncode == 0, result.explain() + cluster.logs()
        outputs.append(json.loads(result.stdout.strip().splitlines()[-1]))
    assert outputs[0]['session'] != outputs[1]['session']
    assert outputs[0]['r'] != outputs[1]['r']  # different seeds, different draws
    for seed, output in zip(seeds, outputs):
        assert output['r'] == output['r_again']  # same seed, same draws, whatever B does
        want = expected(seed, output['r'])
        for name in ('y', 'total', 'accumulated'):
            torch.testing.assert_close(torch.tensor(output[name]), want[name],
                                       rtol=1e-5, atol=1e-4, msg=name)


# ---- isolation ----------------------------------------------------------------------------
def receive_within(socket, kind: type, seconds: float = 10.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if socket.poll(100):
            message, frames = receive(socket)
            if isinstance(message, kind):
                return message, frames
    pytest.fail(f'no {kind.__name__} within {seconds} s')


@pytest.fixture
def stranger(cluster):
    """A raw DEALER with its own session on the shared cluster."""
    socket = dealer(cluster.endpoint)
    send(socket, Hello('tests:stranger', 1, ''))
    receive_within(socket, Welcome)
    yield socket
    send(socket, Goodbye())
    socket.close(linger=200)


def test_a_session_cannot_fetch_another_sessions_value(cluster, stranger):
    with connected(cluster.address) as client:
        secret = gt.from_numpy(np.array([42.0, 7.0], dtype=np.float32))
        assert secret._id == 0
        assert secret.data.tolist() == [42.0, 7.0]  # value 0 exists in the owner's session

        send(stranger, submit_message(fetch=[0], request=1))
        reply, frames = receive_within(stranger, Fetched)
        assert reply.request == 1
        assert reply.errors, reply
        assert not [header for header in reply.tensors if header is not None]
        assert not frames
        assert 'value 0' in str(reply.errors)

        assert secret.data.tolist() == [42.0, 7.0]
        assert client.session is not None


def test_a_session_cannot_read_another_sessions_value(cluster, stranger):
    with connected(cluster.address):
        secret = gt.from_numpy(np.array([42.0, 7.0], dtype=np.float32))
        assert secret.data.tolist() == [42.0, 7.0]

        # A fragment `neg(external 0)` that names value 0 as its input, keeps and fetches it.
        structure = encode_structure([['neg', [-1], {}, None]], [0])
        send(stranger, submit_message(structure=structure, base=100, externals=[0], fetch=[100],
                                      request=2))
        reply, frames = receive_within(stranger, Fetched)
        assert reply.request == 2
        assert reply.errors, reply
        assert not frames
        assert secret.data.tolist() == [42.0, 7.0]
