"""Strangers on a cluster's sockets: a malformed `Register` is refused, with a logged
reason, rather than joining as a worker whose programs all fail; a message that is not
GT's protocol is refused once per sender, naming the problem; garbage sent to a
worker's peer socket is dropped before it is stored, and a session's end still frees
everything it held."""

import time

import msgpack
import pytest
from gt_test_support import connected

import gt
from gt import ShardConfig, SignalConfig
from gt.runtime.exchange import _is_piece_header
from gt.runtime.protocol import MESSAGES, Refused, Register
from gt.runtime.transport import dealer, receive

MALFORMED = {
    # The audit's message: every field of the wrong type.
    'name is not a string': [MESSAGES.index(Register), -1, 12, [1], [[1]], [], '', '', ''],
    'pid is not a process id': [MESSAGES.index(Register), 'w', 'cpu', 'h', 'x',
                                ['tcp://127.0.0.1:1'], '', '', ''],
    'peer_endpoints is not a list of tcp:// and ipc:// addresses': [
        MESSAGES.index(Register), 'w', 'cpu', 'h', 7, ['udp://x'], '', '', ''],
    'peer_endpoints has no tcp:// address': [
        MESSAGES.index(Register), 'w', 'cpu', 'h', 7, ['ipc:///tmp/x.ipc'], '', '', ''],
}


def refusal(socket) -> str:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if socket.poll(100):
            message, _ = receive(socket)
            if isinstance(message, Refused):
                return message.reason
    pytest.fail('no Refused within 10 s')


@pytest.mark.time_limit(90)
def test_a_malformed_register_is_refused_and_logged(start_cluster):
    private = start_cluster(workers=1)
    for problem, header in MALFORMED.items():
        stray = dealer(private.endpoint)
        try:
            stray.send(msgpack.packb(header))
            assert refusal(stray) == f'malformed Register: {problem}'
        finally:
            stray.close(linger=0)
    with connected(private.address):
        assert [w['index'] for w in gt.debug.get_worker_stats()] == [0]  # none joined
        assert (gt.ones(4) * 2).tolist() == [2.0] * 4
    assert 'refused a worker from' in private.logs()
    assert 'malformed Register: name is not a string' in private.logs()


@pytest.mark.time_limit(90)
def test_a_message_not_in_gts_protocol_is_refused_once_per_sender(start_cluster):
    """A client of another GT version waited out its start-up timeout; now it hears why."""
    private = start_cluster(workers=1)
    for header, problem in [(b'\xc1', 'not a GT message'),
                            (msgpack.packb([MESSAGES.index(Register), 'w']),
                             'malformed Register message'),
                            (msgpack.packb([MESSAGES.index(Refused), 'no']),
                             'a Refused message, which the server does not take')]:
        stray = dealer(private.endpoint)
        try:
            stray.send(header)
            assert problem in refusal(stray)
            stray.send(header)  # the second is dropped without a word
            assert not stray.poll(500)
        finally:
            stray.close(linger=0)
    with connected(private.address):
        assert (gt.ones(4) * 2).tolist() == [2.0] * 4
    assert private.logs().count('(is the sender GT of this version?)') == 3


@pytest.mark.time_limit(90)
def test_garbage_on_a_peer_socket_is_dropped_and_sessions_still_end(start_cluster):
    private = start_cluster(workers=2)
    garbage = [msgpack.packb([]), msgpack.packb([1, 2, 3]), msgpack.packb('x'),
               msgpack.packb([0, 0, 0, 0, 'float32', 'not a shape', None]),
               msgpack.packb(['a', 'b', 'c', 'd', None, None, None])]
    for _ in range(2):  # the second session ends as the first did
        with connected(private.address):
            gt.register_config('pair', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1])))
            for worker in gt.debug.get_worker_stats():
                stray = dealer(worker['peer_endpoints'][0])
                for header in garbage:
                    stray.send_multipart([header, b''])
                stray.close(linger=2000)
            time.sleep(0.3)
            with gt.signal.context('pair'):
                rows = gt.ones(8, 4)
            # An all_reduce: each worker waits for the other's piece, and reads the garbage.
            moved = (rows.t() @ rows).relu()
            assert moved.sum().item() == 128.0
            assert all(w['peer_bytes_received'] > 0 for w in gt.debug.get_worker_stats())
        time.sleep(0.5)  # the session's end reaches the workers
    with connected(private.address):
        workers = gt.debug.get_worker_stats()
        assert [w['tensors'] for w in workers] == [0, 0], workers
    assert 'Traceback' not in private.logs(), private.logs()


@pytest.mark.parametrize('header, stored', [
    ([3, 0, 1, 2, 'float32', [2, 3], None], True),
    ([3, 0, 1, 2, None, None, [0, None, 'neg', 'failed']], True),  # a sender's failure
    ([], False), ([3, 0, 1], False), ('x', False), (None, False),
    ([3, 0, 1, True, 'float32', [2], None], False),
    (['3', 0, 1, 2, 'float32', [2], None], False),
    ([3, 0, 1, 2, 'float32', 'ab', None], False),
    ([3, 0, 1, 2, 'float32', [-1], None], False),
    ([3, 0, 1, 2, None, None, 'failed'], False),
])
def test_only_piece_headers_are_stored(header, stored):
    assert _is_piece_header(header) is stored
