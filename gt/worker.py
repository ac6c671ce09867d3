"""`python -m gt.worker --host H -p PORT`: run one GT worker (start one per GPU).

A server that uses CURVE needs its public key (`--curve-server-key`, GT_CURVE_SERVER_KEY);
the worker's own key pair is `--curve-secret` (GT_CURVE_SECRET), else one made in memory.
"""

import argparse
import os

from gt.runtime import curve
from gt.runtime.transport import (
    endpoint_for,
    exit_with_parent,
    serve_until_stopped,
    tcp_port,
    terminate_on_sigterm,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog='python -m gt.worker', description=__doc__)
    parser.add_argument('--host', default='localhost', help="the dispatcher's host")
    parser.add_argument('-p', '--port', type=tcp_port, default=12345, help="the dispatcher's port")
    parser.add_argument('--endpoint', help='a ZeroMQ endpoint to connect to instead')
    parser.add_argument('--backend', choices=['torch', 'pytorch', 'numpy'], default='torch',
                        help='engine that runs ops (default torch; the seeds call it pytorch)')
    parser.add_argument('--device', help='torch device, e.g. cpu or cuda:1 (default: cuda if '
                        'available, else cpu; CUDA_VISIBLE_DEVICES is respected)')
    parser.add_argument('--threads', type=int, help='torch threads for this worker (default: '
                        '$GT_WORKER_THREADS, else torch\'s choice); with several CPU workers '
                        'on one host, give each a share of its cores')
    parser.add_argument('--token', help="the dispatcher's shared secret (default: $GT_TOKEN)")
    parser.add_argument('--curve-server-key', metavar='PATH',
                        help="the dispatcher's CURVE public key file (default: "
                        '$GT_CURVE_SERVER_KEY; without one, no CURVE)')
    parser.add_argument('--curve-secret', metavar='PATH',
                        help="this worker's CURVE key pair, a .key_secret file (default: "
                        '$GT_CURVE_SECRET, else one made in memory)')
    parser.add_argument('--exit-with-parent', type=int, help=argparse.SUPPRESS)
    # Started by a script's local server (gt.runtime.launcher): its stderr is the script's.
    parser.add_argument('--auto-started', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        keys = curve.client_keys(args.curve_server_key, args.curve_secret)
    except (ValueError, RuntimeError) as error:
        parser.exit(2, f'gt.worker: {error}\n')
    if args.token:
        os.environ['GT_TOKEN'] = args.token
    if args.threads is not None:
        if args.threads < 1:
            parser.error(f'--threads must be at least 1, got {args.threads}')
        os.environ['GT_WORKER_THREADS'] = str(args.threads)
    if args.device is not None and args.backend in ('torch', 'pytorch'):
        from gt.runtime.engines import device_problem

        problem = device_problem(args.device)
        if problem:
            parser.exit(2, f'gt.worker: --device {args.device}: {problem}\n')
    terminate_on_sigterm()
    if args.exit_with_parent:
        exit_with_parent(args.exit_with_parent)
    endpoint = args.endpoint or endpoint_for(f'{args.host}:{args.port}')
    from gt.runtime.worker import Worker

    worker = Worker(endpoint, args.backend, args.device, keys,
                    say_if_unanswered=not args.exit_with_parent, auto_started=args.auto_started)
    greeting = f'gt.worker: {worker.engine.describe()} connected to {endpoint}'
    serve_until_stopped(worker.serve_forever, greeting)


if __name__ == '__main__':
    main()
