"""A forked child gets a session of its own on the parent's server; it cannot use the
parent's tensors (their socket is the parent's), and the parent is undisturbed."""

from gt_test_support import run_script

FORK = '''
import os
import gt
x = gt.tensor([1.0, 2.0, 3.0])
assert x.sum().item() == 6.0
pid = os.fork()
if pid == 0:
    code = 0
    if (gt.ones(2) * 5).tolist() != [5.0, 5.0]:
        code = 1
    try:
        (x * 2).sum().item()
        code = 2
    except RuntimeError as error:
        if 'forked child' not in str(error):
            code = 3
    try:
        gt.ones(3) + x  # the child's session and the parent's: ids of two sessions
        code = 4
    except RuntimeError as error:
        if 'mixes tensors of GT sessions' not in str(error):
            code = 5
    os._exit(code)
_, status = os.waitpid(pid, 0)
print('child', os.waitstatus_to_exitcode(status))
print('parent', (x * 3).tolist())
'''


def test_a_forked_child_has_its_own_session_and_the_parent_goes_on():
    result = run_script(FORK)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split('\n')[:2] == ['child 0', 'parent [3.0, 6.0, 9.0]']
