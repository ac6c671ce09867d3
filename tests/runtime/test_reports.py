"""Work that cannot be sent never takes the session's other work with it: what msgpack
cannot carry raises at the user's line, the ops recorded before it still run, and each
tensor of what did not run says why (gt/runtime/reports.py). Once, one such op (or a
signal config) lost the whole pending fragment, and the server then said "value 0 does
not exist in this session" of a tensor made lines before."""

import pytest
from gt_test_support import connected

import gt
from gt import ShardConfig, SignalConfig


@pytest.mark.time_limit(60)
def test_an_op_msgpack_cannot_carry_loses_only_itself_and_what_follows(cluster):
    with connected(cluster.address):
        kept = gt.tensor([1.0, 2.0])
        doubled = kept * 2
        huge = gt.arange(10**20)  # its end is past 64 bits: msgpack cannot carry it
        after = kept + 1  # recorded after it, in the same fragment
        with pytest.raises(OverflowError, match=r'arange \(recorded at .*test_reports.py:\d+\) '
                                                r'has an argument GT cannot send'):
            after.tolist()
        assert kept.tolist() == [1.0, 2.0]
        assert doubled.tolist() == [2.0, 4.0]
        for lost in (huge, after):
            with pytest.raises(OverflowError, match='this tensor was never computed: arange'):
                lost.tolist()
        with pytest.raises(OverflowError, match='this tensor was never computed: arange'):
            after * 3  # at the line that reads it, not at a later fetch
        assert (kept * 3).tolist() == [3.0, 6.0]


@pytest.mark.time_limit(60)
def test_a_number_past_64_bits_raises_where_it_is_used(cluster):
    with connected(cluster.address):
        kept = gt.tensor([1.0, 2.0])
        with pytest.raises(OverflowError, match='does not fit in 64 bits'):
            kept + 10**20
        with pytest.raises(OverflowError, match='does not fit in 64 bits'):
            kept * 2**64
        assert (kept + (2**63 - 1)).dtype == gt.float32
        assert kept.tolist() == [1.0, 2.0]


@pytest.mark.time_limit(60)
def test_a_config_msgpack_cannot_carry_raises_and_keeps_the_pending_work(cluster,
                                                                         fresh_configs):
    with connected(cluster.address):
        kept = gt.tensor([1.0, 2.0])
        config = SignalConfig(shard=ShardConfig(axis=0))
        gt.register_config('unchecked', config)
        object.__setattr__(config.shard, 'axis', 10**20)  # past its checks
        with pytest.raises(ValueError, match='signal configs cannot be sent to the GT server'):
            kept.tolist()
        gt.register_config('unchecked', SignalConfig())  # mended
        assert kept.tolist() == [1.0, 2.0]


def test_a_workers_warning_is_warned_of_with_its_lines_and_raises_nothing(monkeypatch):
    """A compile warning among a fetch's reports (gt.runtime.compiler) is a
    gt.CompileWarning at the user's line once the fetch has its values, naming where its
    ops were recorded while that fragment is known; a failure beside it raises first,
    and the warning waits for a fetch that succeeds."""
    import os
    import warnings

    from gt.runtime import reports as reports_module
    from gt.runtime.reports import Reports

    # This test stands for GT's value methods (tensor_values.py), through which a user
    # fetches: `warn` warns there.
    monkeypatch.setattr(reports_module, 'VALUE_ACCESS', (os.sep + 'reports.py',))
    code = test_a_workers_warning_is_warned_of_with_its_lines_and_raises_nothing.__code__
    reports = Reports()
    reports.sent(100, [(code, 0), (code, 0)], ['matmul', 'add'], {})  # as recording notes
    warning = [100, [0, 1], 'warning', 'a region of 2 ops did not compile']
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        reports.raise_errors([warning], False, 200)
        reports.raise_errors([[7, [0, 1], 'warning', 'of a forgotten fragment']], False, 200)
        reports.warn()
        with pytest.raises(gt.WorkerError, match='relu failed: boom'):
            reports.raise_errors([warning, [None, None, 'relu', 'boom']], False, 200)
        assert len(caught) == 2  # the third waits
        reports.warn()
    told = [str(item.message) for item in caught if item.category is gt.CompileWarning]
    line = code.co_firstlineno
    assert told == [f'a region of 2 ops did not compile\n  its first op recorded at '
                    f'{__file__}:{line} (matmul), its last at {__file__}:{line} (add)',
                    'of a forgotten fragment', told[0]]
    assert {item.filename for item in caught} == {__file__}
    # A filter that makes the warning an error raises it only from `warn`, after the
    # failure beside it: the refused fragment's tensors still say why they were not made.
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        with pytest.raises(gt.WorkerError, match='submit failed: too big'):
            reports.raise_errors([warning, [100, None, 'submit', 'too big']], False, 200)
        with pytest.raises(gt.CompileWarning):
            reports.warn()
    with pytest.raises(gt.WorkerError, match='never computed.*too big'):
        reports.check(150)
