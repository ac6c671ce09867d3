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
        gt.ones(3) + x  # a transform's own tensor and a mean the parent made
        code = 4
    except RuntimeError as error:
        if 'forked child' not in str(error):  # not "mixes tensors of GT sessions"
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


LOADERS = '''
import gt
import torch
from gt.utils.data import DataLoader, Dataset, TensorDataset

class Made(Dataset):  # makes its tensors in the worker, as a Dataset reading files does
    def __len__(self):
        return 8
    def __getitem__(self, i):
        return gt.full((2,), float(i)), i

class Stored(Dataset):  # hands out the parent's tensors as they are
    def __init__(self):
        self.items = [gt.full((2,), float(i)) for i in range(8)]
    def __len__(self):
        return 8
    def __getitem__(self, i):
        return self.items[i]

sums = [float(x.sum()) for x, _ in DataLoader(Made(), batch_size=4, num_workers=2)]
print('made', sums)
for name, loader in [
        ('indexed', DataLoader(TensorDataset(gt.arange(16.).view(8, 2), gt.arange(8)),
                               batch_size=4, num_workers=2)),
        ('stored', DataLoader(Stored(), batch_size=None, num_workers=2))]:
    try:
        list(loader)
        print(name, 'loaded')
    except RuntimeError as error:
        print(name, 'raised', 'forked child of it (a DataLoader worker' in str(error))
print('after', gt.arange(4.).sum().item())
'''


def test_a_dataloader_worker_given_the_parents_tensors_raises_in_the_parent():
    """A worker process indexing the parent's GT tensors, or sending them back as they
    are, raises in the parent, naming the cause (the parent used to hang); datasets that
    make their tensors in the worker load as torch's do."""
    result = run_script(LOADERS, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split('\n')[:4] == [
        'made [12.0, 44.0]', 'indexed raised True', 'stored raised True', 'after 6.0']


AUGMENTED = '''
import sys
import torch
import gt

class Augmented(torch.utils.data.Dataset):
    """Draws and reads a value per sample, as a random flip does."""
    def __init__(self, lib):
        self.lib = lib
    def __len__(self):
        return 8
    def __getitem__(self, i):
        x = self.lib.full((2,), float(i)) * self.lib.rand(1)
        if self.lib.rand(1).item() < 0.5:
            x = x.flip(0)
        return {'x': x, 'i': i}

def listed(batch):
    return [sample['x'] for sample in batch], [sample['i'] for sample in batch]

for lib in (gt, torch):
    for collate in (None, listed):
        lib.manual_seed(0)
        loader = torch.utils.data.DataLoader(Augmented(lib), batch_size=2, num_workers=2,
                                             collate_fn=collate, timeout=60)
        print(lib.__name__, [str(batch) for batch in loader])
'''


def test_dataloader_workers_that_draw_and_fetch_load_torchs_batches():
    """Each worker's session is seeded as torch seeds the worker (its draws were not
    reproducible), and its batches' values are fetched in the worker's main thread
    before they are queued: pickled by the queue's feeder thread, they were a second
    thread's fetch, refused, and the parent waited for good (found by an audit)."""
    result = run_script(AUGMENTED, timeout=180)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().split('\n')
    assert len(lines) == 4 and lines[0].startswith('gt ')
    assert lines[0].removeprefix('gt ') == lines[2].removeprefix('torch ')
    assert lines[1].removeprefix('gt ') == lines[3].removeprefix('torch ')
