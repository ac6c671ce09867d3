"""`python -m gt.scripts.keys DIR [--name NAME]`: write a CURVE key pair for GT.

`DIR/NAME.key` is the public key, to hand out; `DIR/NAME.key_secret` holds the secret one
too and is readable by its owner alone. The server's pair (the default name, `server`)
goes to `gt.server --curve-secret DIR/server.key_secret`, and its public key to clients
and workers as GT_CURVE_SERVER_KEY. A client's or worker's pair is GT_CURVE_SECRET, and
its public key goes in the server's `--curve-clients` directory.
"""

import argparse
import os
import re
import sys

import zmq.auth

from gt.runtime import curve


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog='python -m gt.scripts.keys', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('directory', metavar='DIR', help='where to write the pair (made if '
                        'missing)')
    parser.add_argument('--name', default='server',
                        help='the files\' name: NAME.key and NAME.key_secret (default server)')
    parser.add_argument('--force', action='store_true', help='overwrite an existing pair')
    args = parser.parse_args(argv)
    if not re.fullmatch(r'[\w.-]+', args.name):
        parser.error(f'--name {args.name!r}: use letters, digits, ".", "-" and "_" only')
    try:
        curve.require_curve('gt.scripts.keys')
    except RuntimeError as error:
        parser.exit(2, f'gt.scripts.keys: {error}\n')
    public = os.path.join(args.directory, f'{args.name}.key')
    secret = public + '_secret'
    existing = [path for path in (public, secret) if os.path.exists(path)]
    if existing and not args.force:
        parser.exit(2, f'gt.scripts.keys: {existing[0]} exists; pass --force to replace it '
                    '(whoever holds its public key must then be given the new one)\n')
    os.makedirs(args.directory, exist_ok=True)
    for path in existing:
        os.unlink(path)
    previous = os.umask(0o077)  # the secret file is never readable by others, even briefly
    try:
        zmq.auth.create_certificates(args.directory, args.name)
    finally:
        os.umask(previous)
    os.chmod(public, 0o644)
    print(f'public key: {public}\nkey pair:   {secret} (keep it secret)', file=sys.stderr)
    print(curve.load_public(public).decode())


if __name__ == '__main__':
    main()
