"""`python -m gt.scripts.coverage [-v] [-n SAMPLES] [-k PATTERN]`: how much of PyTorch's
op database GT runs like torch. Every OpInfo in torch's `op_db` is checked through GT by
gt/scripts/opinfo_check.py (on an auto-started local server), then counted by name: a
name passes only when all its variants pass, values and gradients. Totals are given for
top-level names (`sin`) and `nn.functional.*` names, the two numbers issue 8 tracks."""

import argparse
import collections
import time
import warnings

from gt.scripts.opinfo_check import Outcome, check_op_info, op_id, op_infos


def passing_names(outcomes: dict[str, list[Outcome]], prefix: str = '') -> tuple[int, int]:
    """(passing, total) over names under `prefix` ('' for top-level names)."""
    names = [name for name in outcomes
             if (name.startswith(prefix) if prefix else '.' not in name)]
    passing = [name for name in names if all(o.status == 'pass' for o in outcomes[name])]
    return len(passing), len(names)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog='python -m gt.scripts.coverage', description=__doc__)
    parser.add_argument('-v', '--verbose', action='store_true',
                        help='print every OpInfo with its status and first error line')
    parser.add_argument('-n', '--samples', type=int, default=3,
                        help='samples tried per OpInfo (default 3)')
    parser.add_argument('-k', '--only', default='*',
                        help="shell pattern over op ids, e.g. 'linalg.*' (default all)")
    options = parser.parse_args(argv)

    warnings.filterwarnings('ignore')  # torch's deprecation notes on old ops, per call
    start = time.monotonic()
    outcomes: dict[str, list[Outcome]] = collections.defaultdict(list)
    for op in op_infos(options.only):
        outcome = check_op_info(op, options.samples)
        outcomes[op.name].append(outcome)
        if options.verbose:
            print(f'{outcome.status:9} {op_id(op):45} {outcome.reason}', flush=True)
    elapsed = time.monotonic() - start

    statuses = collections.Counter(o.status for found in outcomes.values() for o in found)
    print('OpInfos: ' + ', '.join(f'{count} {status}' for status, count in
                                   sorted(statuses.items())))
    top, top_total = passing_names(outcomes)
    functional, functional_total = passing_names(outcomes, 'nn.functional.')
    print(f'top-level names passing: {top}/{top_total}')
    print(f'nn.functional names passing: {functional}/{functional_total}')
    print(f'elapsed: {elapsed:.1f} s ({options.samples} samples per OpInfo)')


if __name__ == '__main__':
    main()
