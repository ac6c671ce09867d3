"""Looking inside: worker statistics, the IR the dispatcher built for this client (as text
or as a Graphviz picture), the autograd tape, and how backward passes went."""

import os
import shutil
import subprocess

from gt import backward_replay, tape_printing
from gt.runtime import client as connection


def get_worker_stats() -> list[dict]:
    """Per worker: device, live tensors and bytes, ops and programs run."""
    return sorted(connection.current().stats().workers, key=lambda worker: worker['index'])


def get_dispatcher_stats() -> dict:
    return connection.current().stats().dispatcher


def print_worker_stats() -> None:
    """One line per worker: device, tensors held, ops run (and how many programs ran on
    its express lane, and how many fetches it answered before their program ended:
    gt.runtime.early_reply), the bytes of moves, what it compiled (programs, seconds spent,
    failures, layouts deferred, runs that used compiled code), how many programs it runs
    on fewer threads than it has and how many eager ones gave the same bits on one thread
    (gt.runtime.thread_tuning); then this session's
    share: its ops and programs, and per worker its busy seconds and the bytes it holds
    there."""
    stats = connection.current().stats()
    for worker in sorted(stats.workers, key=lambda worker: worker['index']):
        moved = compiled = threads = ''
        if worker['peer_bytes_sent'] or worker['peer_bytes_received']:
            moved = (f", {worker['peer_bytes_sent']:,} bytes sent to peers and "
                     f"{worker['peer_bytes_received']:,} received")
        if any(worker.get(key) for key in ('compiled_regions', 'compile_failures',
                                            'compiles_pending', 'compiles_deferred')):
            compiled = (f"; compiled {worker['compiled_programs']} programs "
                        f"({worker['compiled_regions']} regions) in "
                        f"{worker['compile_seconds']:.1f} s, {worker['compile_failures']} "
                        f"failed, {worker['compiles_pending']} pending, "
                        f"{worker['compiles_deferred']} deferred, "
                        f"{worker['compiled_runs']} runs used them")
        if worker.get('programs_tuned'):
            threads = (f"; {worker['programs_on_fewer_threads']} of "
                       f"{worker['programs_tuned']} timed programs run on fewer than its "
                       f"{worker['threads']} threads")
        if worker.get('eager_programs_checked'):
            threads += (f"; {worker['eager_programs_same_bits_on_one_thread']} of "
                        f"{worker['eager_programs_checked']} eager programs checked gave "
                        f"the same bits on one thread")
        print(f"worker {worker['index']} ({worker['device']}, {worker['engine']}): "
              f"{worker['tensors']} tensors, {worker['bytes']:,} bytes, "
              f"{worker['ops']} ops in {worker['programs_run']} programs"
              + (f" ({worker['express_programs']} on its express lane)"
                 if worker.get('express_programs') else '')
              + (f", {worker['early_answers']} fetches answered before their program ended"
                 if worker.get('early_answers') else '') + f"{moved}{compiled}{threads}")
    session = stats.dispatcher.get('session')
    if session:
        workers = sorted(set(session['worker_seconds']) | set(session['bytes']))
        shares = ', '.join(f"worker {w}: {session['worker_seconds'].get(w, 0.0):.3f} s busy, "
                           f"{session['bytes'].get(w, 0):,} bytes held" for w in workers)
        print(f"this session ({session['client']}): {session['ops']} ops in "
              f"{session['programs']} worker programs" + (f'; {shares}' if shares else ''))


def dump_ir(show: bool = True, workers: bool = False) -> str:
    """The IR of this client's most recent fragment (pending work is sent first), as the
    dispatcher's passes left it: types, placements, and the moves insert_moves added; with
    `workers`, the program each worker runs, with local (per-shard) types. Printed unless
    `show` is False; returned either way."""
    text = connection.current().dump('workers' if workers else 'ir')
    if show:
        print(text)
    return text


def view_ir(path: str) -> str:
    """Draw the IR of this client's most recent fragment to `path`: one cluster per worker,
    moves between workers in red, each edge labelled with its value's placement. The
    suffix picks the format (`.svg`, `.png`, `.pdf`, or `.dot` for the Graphviz source);
    drawing needs Graphviz's `dot` (Debian/Ubuntu: apt install graphviz). Returns `path`."""
    source = connection.current().dump('dot')
    if not source.startswith('digraph'):  # the dispatcher's word for no fragment yet
        raise RuntimeError(f'view_ir: nothing to draw: {source.strip("()")} (record some '
                           'ops and fetch a value, or call gt.sync(), first)')
    form = os.path.splitext(path)[1].lstrip('.').lower()
    if form == 'dot':
        with open(path, 'w') as file:
            file.write(source)
        return path
    if form not in ('svg', 'png', 'pdf'):
        raise ValueError(f'view_ir: cannot tell the format from {path!r}; end it in .svg, '
                         '.png, .pdf or .dot')
    if shutil.which('dot') is None:
        raise RuntimeError("view_ir needs Graphviz's `dot` program (Debian/Ubuntu: apt install "
                           'graphviz; macOS: brew install graphviz), or a path ending in .dot')
    drawn = subprocess.run(['dot', f'-T{form}', '-o', path], input=source, text=True,
                           capture_output=True)
    if drawn.returncode != 0:
        raise RuntimeError(f'view_ir: Graphviz could not draw {path!r}: '
                           f'{drawn.stderr.strip() or f"dot exited with {drawn.returncode}"}')
    return path


def print_tape() -> None:
    """Print the autograd tape that is alive now: what backward() would walk, oldest first."""
    print('\n'.join(tape_printing.tape_lines()))


def get_backward_stats() -> dict:
    """How this process's backward() calls went: `replayed` (a tape seen before, its ops
    recorded again without running gradient rules), `recorded` (a second sight, whose ops
    were kept) and `ran_rules` (a first sight, or a tape with hooks, retained grads and
    the like, which runs the rules every time); see gt/backward_replay.py."""
    return dict(backward_replay.counts)
