"""`python -m gt.server -p PORT`: run a GT dispatcher that clients and workers connect to.

Bound beyond loopback, it needs a shared secret (`--token`, or GT_TOKEN; clients and
workers set GT_TOKEN to the same) or CURVE keys (`--curve-secret`: all traffic encrypted,
clients and workers set GT_CURVE_SERVER_KEY to its public key; `--curve-clients DIR`
admits only the public keys in DIR), unless `--insecure` says anyone who can reach it
may use it.
"""

import argparse
import os

import zmq

from gt.runtime import environment
from gt.runtime.curve import ServerCurve
from gt.runtime.dispatcher import Dispatcher
from gt.runtime.events import LogInUse
from gt.runtime.guards import Limits
from gt.runtime.transport import (
    exit_with_parent,
    local_socket_path,
    serve_until_stopped,
    tcp_port,
    terminate_on_sigterm,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog='python -m gt.server', description=__doc__)
    parser.add_argument('-p', '--port', type=tcp_port, default=12345,
                        help='TCP port (default 12345)')
    parser.add_argument('--host', default='127.0.0.1',
                        help='interface to bind (default loopback; 0.0.0.0 for all)')
    parser.add_argument('--endpoint', help='a ZeroMQ endpoint to bind instead of host:port')
    parser.add_argument('--log', metavar='PATH',
                        help='write the instruction log here (as GT_INSTRUCTION_LOG does)')
    parser.add_argument('--token', default=os.environ.get('GT_TOKEN') or None,
                        help='a shared secret clients and workers must present (GT_TOKEN)')
    parser.add_argument('--curve-secret', metavar='PATH',
                        default=os.environ.get('GT_CURVE_SECRET') or None,
                        help='encrypt with CURVE, this key pair (a .key_secret file from '
                        'python -m gt.scripts.keys; GT_CURVE_SECRET)')
    parser.add_argument('--curve-clients', metavar='DIR',
                        default=os.environ.get('GT_CURVE_CLIENTS') or None,
                        help='admit only CURVE clients and workers whose public keys (.key '
                        'files) are in DIR (GT_CURVE_CLIENTS; default: any key)')
    parser.add_argument('--insecure', action='store_true',
                        help='listen beyond loopback without a token or CURVE')
    parser.add_argument('--max-message-bytes', type=environment.size_argument,
                        default=environment.size('GT_MAX_MESSAGE_BYTES'),
                        help='refuse larger messages unread, e.g. 2G (GT_MAX_MESSAGE_BYTES; '
                        'default: no bound)')
    parser.add_argument('--session-memory-limit', type=environment.size_argument,
                        default=environment.size('GT_SESSION_MEMORY_LIMIT'),
                        help='bytes one session may hold over all workers, e.g. 8G '
                        '(GT_SESSION_MEMORY_LIMIT; default: no limit)')
    parser.add_argument('--runtime-dir', help=argparse.SUPPRESS)
    parser.add_argument('--exit-with-parent', type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    public = args.endpoint is None and args.host not in LOOPBACK or (
        args.endpoint is not None and args.endpoint.startswith('tcp://')
        and args.endpoint[len('tcp://'):].rsplit(':', 1)[0] not in LOOPBACK)
    curve = None
    if args.curve_secret or args.curve_clients:
        if not args.curve_secret:
            parser.exit(2, 'gt.server: --curve-clients needs --curve-secret, the server\'s own '
                        'key pair\n')
        try:
            curve = ServerCurve(args.curve_secret, args.curve_clients)
        except (ValueError, RuntimeError) as error:
            parser.exit(2, f'gt.server: {error}\n')
    if public and not args.token and not args.curve_secret and not args.insecure:
        parser.exit(2, f'gt.server: refusing to listen on {args.endpoint or args.host} without '
                    'a token or CURVE keys: anyone who can reach it could run code on your '
                    'workers and read other users\' tensors. Pass --token SECRET (clients and '
                    'workers set GT_TOKEN=SECRET), or --curve-secret DIR/server.key_secret to '
                    'encrypt (make the keys with `python -m gt.scripts.keys DIR`; clients and '
                    'workers set GT_CURVE_SERVER_KEY=DIR/server.key), or --insecure if the '
                    'network is yours alone.\n')
    log = args.log or os.environ.get('GT_INSTRUCTION_LOG')
    problem = log and environment.unwritable(log)
    if problem:  # before listening: a failure after left the ipc socket file behind
        parser.exit(2, f'gt.server: cannot write the instruction log {log!r}: {problem}\n')
    limits = Limits(args.token, args.max_message_bytes, args.session_memory_limit or None,
                    curve)
    terminate_on_sigterm()
    if args.exit_with_parent:
        exit_with_parent(args.exit_with_parent)
    if args.endpoint:
        endpoints = [args.endpoint]
    else:
        # Clients and workers on this host find the ipc socket and skip the TCP stack.
        endpoints = [f'tcp://{args.host}:{args.port}', f'ipc://{local_socket_path(args.port)}']
    try:
        # The monitor feed is a PUB socket, which checks no token: beyond loopback it
        # needs CURVE (or --insecure), else it would show every session to anyone.
        shown = not args.endpoint and (curve is not None or not args.token)
        dispatcher = Dispatcher(endpoints, runtime_dir=args.runtime_dir, log_path=args.log,
                                monitor_host=args.host if shown else '127.0.0.1',
                                limits=limits)
    except zmq.ZMQError as error:
        raise SystemExit(f'gt.server: cannot listen on {", ".join(endpoints)}: {error}') from None
    except LogInUse as error:
        parser.exit(2, f'gt.server: {error}\n')
    serve_until_stopped(dispatcher.serve_forever,
                        f'gt.server: listening on {", ".join(endpoints)}'
                        + (f' with CURVE, public key {curve.public_key}' if curve else ''))


LOOPBACK = ('127.0.0.1', 'localhost', '::1', '[::1]')
if __name__ == '__main__':
    main()
