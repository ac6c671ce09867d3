"""`python -m gt.server -p PORT`: run a GT dispatcher that clients and workers connect to."""

import argparse
import os

from gt.runtime.dispatcher import Dispatcher
from gt.runtime.transport import exit_with_parent, terminate_on_sigterm


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog='python -m gt.server', description=__doc__)
    parser.add_argument('-p', '--port', type=int, default=12345, help='TCP port (default 12345)')
    parser.add_argument('--host', default='127.0.0.1',
                        help='interface to bind (default loopback; 0.0.0.0 for all)')
    parser.add_argument('--endpoint', help='a ZeroMQ endpoint to bind instead of host:port')
    parser.add_argument('--runtime-dir', help=argparse.SUPPRESS)
    parser.add_argument('--exit-with-parent', type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    terminate_on_sigterm()
    if args.exit_with_parent:
        exit_with_parent(args.exit_with_parent)
    endpoint = args.endpoint or f'tcp://{args.host}:{args.port}'
    dispatcher = Dispatcher([endpoint], runtime_dir=args.runtime_dir)
    if os.environ.get('GT_VERBOSE') == '1':
        print(f'gt.server: listening on {endpoint}', flush=True)
    try:
        dispatcher.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == '__main__':
    main()
