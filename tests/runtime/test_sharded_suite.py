"""The API, autograd and gt.nn suites again, on 3 workers with every created tensor
sharded (uneven shards included): results never depend on placement. The re-run starts
when collection ends and runs beside the suites before this one (see `ShardedRerun` in
tests/conftest.py); this test says how it ended."""

import gt_test_support


def test_the_api_suites_pass_with_everything_sharded_over_3_workers():
    result = gt_test_support.sharded_rerun.result()
    assert result.returncode == 0, result.stdout[-7000:]
    assert ' passed' in result.stdout
