"""A program's compiled form: its regions compiled per input layout, switched to when ready.

The dispatcher marks a program for compiling (`[when, backend, steps]`: from its first
run or once hot, with which backend, and which steps may be compiled, all when None).
The first run that asks for a layout (the inputs' shapes, strides and dtypes) runs
eagerly while keeping each region's inputs as examples (values never change), then
submits the regions to the worker's Compiler. Later runs use the eager generated
function until every region of that layout has compiled (or failed, and stays eager),
then a driver that calls the compiled regions between the eager steps. Shapes that
change make new layouts: each is compiled separately, up to `MAX_LAYOUTS` per program;
beyond that, new layouts run eagerly. The compiler may also defer a new layout (see
gt.runtime.compiler): its program then runs eagerly, and asks again at its next run.
"""

import functools
from types import SimpleNamespace
from typing import Any, Callable

import torch

from gt.ir import OPS
from gt.runtime.codegen import Step, generate
from gt.runtime.compiler import Compiler, failure_warning
from gt.runtime.regions import Region, partition

MAX_LAYOUTS = 4
MIN_REGION_OPS = 2  # a compiled call costs a few microseconds: one op alone is not worth it


class CompiledProgram:
    def __init__(self, steps: list[Step], input_slots: list[int], result_slots: list[int],
                 spec: list, compiler: Compiler, hot_runs: int, locations: list):
        when, self.backend, marked = spec
        self.locations = locations  # each step's place among its fragment's op locations
        self.last_run = (-1, 0)  # (session, fragment base) of its last run
        self.first_run = 1 if when == 'always' else hot_runs
        self.steps, self.input_slots, self.result_slots = steps, input_slots, result_slots
        self.compiler = compiler
        rows = [OPS[step.op] for step in steps]
        marked = None if marked is None else set(marked)
        compilable = [row.compilable and row.traces(step.attrs)
                      and (marked is None or index in marked)
                      for index, (row, step) in enumerate(zip(rows, steps))]
        hoistable = [row.source and not (row.random or row.effects) for row in rows]
        self.order = partition(steps, compilable, hoistable, result_slots, MIN_REGION_OPS)
        self.eager_regions = {id(region): _eager(steps, region, compiler.device)
                              for region in self.order
                              if isinstance(region, Region)}
        self.layouts: dict[tuple, _Layout] = {}

    def runner(self, inputs: list, runs: int, session: int,
               base: int) -> tuple[Callable | None, bool]:
        """The function to run these inputs with and whether it is compiled; None while
        there is nothing compiled for their layout (after starting to compile it, if the
        compiler admits it: see gt.runtime.compiler). `runs`: the program's runs so far,
        by this session; `session`: the one running it now, for the fragment at `base`."""
        if not self.eager_regions:
            return None, False
        self.last_run = (session, base)
        try:
            key = tuple((value.shape, value.stride(), value.dtype) for value in inputs)
        except AttributeError:  # a failed input: the eager path reports it
            return None, False
        layout = self.layouts.get(key)
        if layout is None:
            if len(self.layouts) >= MAX_LAYOUTS or not self.compiler.admits(session, runs):
                return None, False
            layout = self.layouts[key] = _Layout(session)
        if layout.driver is not None:
            if layout.failure is not None:  # a session sharing it hears of it too
                self.compiler.tell(session, *layout.failure)
            return layout.driver, layout.compiled
        if layout.futures is None:
            return self._probe(layout), False
        if all(future.done() for future in layout.futures.values()):
            layout.compiled = any(not f.exception() for f in layout.futures.values())
            failed = [(layout.futures[id(region)].exception(), region) for region in self.order
                      if isinstance(region, Region) and layout.futures[id(region)].exception()]
            if failed:
                error, region = failed[0]
                layout.failure = (failure_warning(error, region, self.backend),
                                  functools.partial(self.origin, region))
            layout.driver = self._driver(layout)
            self.compiler.used(layout)
            self.compiler.programs_compiled += layout.compiled
            return layout.driver, layout.compiled
        return None, False

    def may_compile(self) -> bool:
        """False once nothing of it can run compiled: no region to compile, or every
        layout's compile has ended and none compiled (it runs eagerly for good, and its
        thread count is chosen as an eager program's)."""
        return bool(self.eager_regions) and (not self.layouts or any(
            layout.driver is None or layout.compiled for layout in self.layouts.values()))

    def origin(self, region: Region, session: int) -> list:
        """`[base, [first, last]]`: the fragment this program last ran for, if `session`
        ran it (else None), and where the region's first and last ops sit among its op
        locations (the client turns them into the user's lines)."""
        last_session, base = self.last_run
        return [base if last_session == session else None,
                [self.locations[region.steps[0]], self.locations[region.steps[-1]]]]

    def _probe(self, layout: '_Layout') -> Callable:
        """Run eagerly, noting each region's input layouts; then submit the regions."""
        examples: dict[int, tuple] = {}

        def recorder(region: Region) -> Callable:
            eager = self.eager_regions[id(region)]

            def record(*values: Any) -> Any:
                examples[id(region)] = values
                return eager(*values)
            return record

        driver = self._generate(recorder)

        def probe(inputs: list, context: Any) -> list:
            results = driver(inputs, context)
            layout.futures = {id(region): self.compiler.submit(
                self.steps, region, examples[id(region)], self.backend, layout.session,
                functools.partial(self.origin, region))
                for region in self.order if isinstance(region, Region)}
            self.compiler.watch(layout, list(layout.futures.values()))
            return results
        return probe

    def _driver(self, layout: '_Layout') -> Callable:
        def chosen(region: Region) -> Callable:
            future = layout.futures[id(region)]
            return self.eager_regions[id(region)] if future.exception() else future.result()
        return self._generate(chosen)

    def _generate(self, callable_for: Callable[[Region], Callable]) -> Callable:
        steps = []
        for item in self.order:
            if isinstance(item, Region):
                steps.append(Step(callable_for(item), False, item.inputs, {}, item.outputs,
                                  'region', True))
            else:
                steps.append(self.steps[item])
        return generate(steps, self.input_slots, self.result_slots)


class _Layout:
    __slots__ = ('session', 'futures', 'driver', 'compiled', 'failure', '__weakref__')

    def __init__(self, session: int) -> None:
        self.session = session  # whose run started its compile
        self.futures: dict | None = None  # region id -> Future of its compiled callable
        self.driver: Callable | None = None
        self.compiled = False  # whether any region of the driver is compiled
        self.failure: tuple | None = None  # (warning, origin) of its first region that failed


def _eager(steps: list[Step], region: Region, device: str) -> Callable:
    """The region's steps as one uncompiled call; its creation ops make tensors on `device`."""
    run = generate([steps[i] for i in region.steps], list(region.inputs), list(region.outputs))
    placed = SimpleNamespace(device=torch.device(device))
    return lambda *values: run(values, placed)
