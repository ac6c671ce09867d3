"""PyTorch's op database as the oracle: every OpInfo GT reaches, on a couple of its
samples, gives torch's values and gradients through the real runtime.

The check is gt/scripts/opinfo_check.py, shared with `python -m gt.scripts.coverage`.
OpInfos GT has no route for, and random ones, skip with the checker's reason; those
that GT reaches and cannot pass are in KNOWN_FAILURES, strictly expected to fail, so
that one that starts passing must leave the list.
"""

import pytest

from gt.scripts.opinfo_check import check_op_info, op_id, op_infos

SAMPLES = 3  # per OpInfo, as the coverage script: the module takes about a minute

COMPLEX = 'complex result (GT has no complex dtypes)'
NO_META = 'no meta or fake kernel (fallback: see report)'

# OpInfo id -> why GT cannot pass it. A reason starting with 'hangs' skips the test.
KNOWN_FAILURES = {
    **dict.fromkeys(['view_as_complex', 'complex', 'stft', 'polar', 'cdouble', 'cfloat',
                     'chalf', 'linalg.eig', 'linalg.eigvals', 'fft.fft', 'fft.fft2',
                     'fft.fftn', 'fft.rfft', 'fft.rfft2', 'fft.rfftn', 'fft.ifft',
                     'fft.ifft2', 'fft.ifftn', 'fft.ihfft', 'fft.ihfft2', 'fft.ihfftn'],
                    COMPLEX),
    'hash_tensor': 'uint64 result',
    **dict.fromkeys(['linalg.lstsq', 'linalg.lstsq.grad_oriented'], NO_META),
    'nn.functional.linear_cross_entropy.chunked': 'options object argument',
    'nn.functional.linear_cross_entropy.chunked_none': 'options object argument',
    'as_strided.partial_views': 'storage offset (GT tensors are not views)',
    'resize_': 'refused: resizes storage',
    'to_sparse': 'refused: sparse layout',
    'native_batch_norm': 'refused with running statistics: they would be updated in place '
                         'on the worker (gt.nn.functional.batch_norm is GT\'s own form)',
}


def cases() -> list:
    params = []
    for op in op_infos():
        reason = KNOWN_FAILURES.get(op_id(op))
        marks = []
        if reason is not None and reason.startswith('hangs'):
            marks.append(pytest.mark.skip(reason=reason))
        elif reason is not None:
            marks.append(pytest.mark.xfail(reason=reason, strict=True))
        params.append(pytest.param(op, id=op_id(op), marks=marks))
    return params


@pytest.mark.filterwarnings('ignore')  # torch's deprecation notes on the old ops it tests
@pytest.mark.parametrize('op', cases())
def test_op_matches_torch(op):
    outcome = check_op_info(op, SAMPLES)
    if outcome.status in ('skip', 'unreached'):
        pytest.skip(outcome.reason)
    assert outcome.status == 'pass', outcome.reason


def test_known_failures_name_existing_op_infos():
    assert set(KNOWN_FAILURES) <= {op_id(op) for op in op_infos()}
