"""`python -m gt.server -p PORT`: run a GT dispatcher that clients and workers connect to."""

import argparse

import zmq

from gt.runtime.dispatcher import Dispatcher
from gt.runtime.transport import (
    exit_with_parent,
    local_socket_path,
    serve_until_stopped,
    terminate_on_sigterm,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog='python -m gt.server', description=__doc__)
    parser.add_argument('-p', '--port', type=int, default=12345, help='TCP port (default 12345)')
    parser.add_argument('--host', default='127.0.0.1',
                        help='interface to bind (default loopback; 0.0.0.0 for all)')
    parser.add_argument('--endpoint', help='a ZeroMQ endpoint to bind instead of host:port')
    parser.add_argument('--log', metavar='PATH',
                        help='write the instruction log here (as GT_INSTRUCTION_LOG does)')
    parser.add_argument('--runtime-dir', help=argparse.SUPPRESS)
    parser.add_argument('--exit-with-parent', type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    terminate_on_sigterm()
    if args.exit_with_parent:
        exit_with_parent(args.exit_with_parent)
    if args.endpoint:
        endpoints = [args.endpoint]
    else:
        # Clients and workers on this host find the ipc socket and skip the TCP stack.
        endpoints = [f'tcp://{args.host}:{args.port}', f'ipc://{local_socket_path(args.port)}']
    try:
        dispatcher = Dispatcher(endpoints, runtime_dir=args.runtime_dir, log_path=args.log,
                                monitor_host=args.host if not args.endpoint else '127.0.0.1')
    except zmq.ZMQError as error:
        raise SystemExit(f'gt.server: cannot listen on {", ".join(endpoints)}: {error}') from None
    serve_until_stopped(dispatcher.serve_forever,
                        f'gt.server: listening on {", ".join(endpoints)}')


if __name__ == '__main__':
    main()
