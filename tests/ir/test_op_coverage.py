"""Every row of the op table is exercised against torch by some test_ops_* file."""

from pathlib import Path

from gt.ir import OPS


def test_every_op_has_oracle_tests():
    text = ''.join(path.read_text() for path in Path(__file__).parent.glob('test_ops_*.py'))
    missing = sorted(name for name in OPS if f"'{name}'" not in text)
    assert not missing, f'ops without tests against torch: {missing}'
