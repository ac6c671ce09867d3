"""A client is used from one thread at a time. Two threads fetching at once each took
the other's reply off the one socket and both waited forever (an audit's script hung in
4 of 5 runs); now the second is told, and the session goes on."""


from gt_test_support import run_script

RACE = '''
import threading
import gt
x = gt.randn(6, 4)
inside = threading.Event()
go_on = threading.Event()
client = gt.runtime.client.current()
poll = client._poll

def slow_poll(milliseconds):  # the first fetch waits for its reply until the second tried
    inside.set()
    go_on.wait(30)
    return poll(milliseconds)

client._poll = slow_poll
first = threading.Thread(target=lambda: print('first', x[0].sum().item() is not None))
first.start()
inside.wait(30)
client._poll = poll
try:
    x[1].sum().item()
    print('second fetched')
except RuntimeError as error:
    print('second raised', 'another thread was using it' in str(error))
go_on.set()
first.join(30)
print('after', gt.ones(3).sum().item())
'''


def test_a_second_thread_fetching_meanwhile_is_told_and_the_session_goes_on():
    result = run_script(RACE, timeout=60)
    assert result.returncode == 0, result.explain()
    assert result.stdout.split('\n')[:3] == ['second raised True', 'first True', 'after 3.0']


def test_threads_taking_turns_share_a_client():
    result = run_script('''
        import threading
        import gt
        x = gt.arange(4.0)
        results = []
        for row in range(4):  # a worker thread at a time, as a loader's producer
            thread = threading.Thread(target=lambda r=row: results.append((x * r).sum().item()))
            thread.start()
            thread.join()
        print(results)
    ''', timeout=60)
    assert result.returncode == 0, result.explain()
    assert result.stdout.strip() == '[0.0, 6.0, 12.0, 18.0]'
