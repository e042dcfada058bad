"""One invocation's run policy: made once by entry.invoke, passed to the stages, read by the low-level helpers.

What a run decides from its command line (verbose, --json, --allow-insecure-http, a temporary cache dir) and
what it keeps while it runs (the --json document held until the end, the failure reported, the Rich console made
for its stderr) used to be module globals; a second invocation in the same process (a test, a thread) then saw
the first one's. Now each invocation has its own RunContext: the policy is a frozen record (a flag parsed later
replaces it with `configure`, never mutates it), the bookkeeping one mutable RunRecord it carries.

Why a ContextVar and not only a parameter: the console, the HTTP policy, the state dir and the CI output are
called from hundreds of places several layers below the stage that knows the run (a warning in a wheel reader,
a URL check in an adapter); threading a parameter through all of them would change most signatures for one
read. The stage entry points take the context as a parameter (`using`), the helpers read `current()`. A
ContextVar is per thread and per asyncio task, so two invocations at once never see each other's; the worker
pools that print or check URLs start their threads in the caller's context (`inherit`, `carried`).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from rich.console import Console

T = TypeVar("T")


@dataclass
class RunRecord:
    """What one run keeps while it runs (mutable, shared by every copy of its RunContext)."""

    failure: dict[str, Any] | None = None  # what entry reported, for --json's failure document
    pending_json: list[Any] = field(default_factory=list)  # the --json document, printed when the command ends
    json_emitted: bool = False
    temporary_cache: Path | None = None  # statedir.allow_temporary_cache: this run's private cache dir
    summary_warned: bool = False  # ci_output: an unwritable job summary is warned about once
    console: Console | None = None  # the run's Rich console, made on its first print (for the stderr of then)


@dataclass(frozen=True)
class RunContext:
    """The policy of one invocation of the CLI (or of a stage driven in-process)."""

    argv: tuple[str, ...] = ()  # the arguments after the program name, global flags first
    verbose: bool = False  # -v: commands and their output
    json: bool = False  # --json: one JSON document on stdout, no tables
    allow_insecure_http: bool = False  # --allow-insecure-http: credentials may go over http:// to another host
    record: RunRecord = field(default_factory=RunRecord, compare=False, repr=False)

    def wants_json(self) -> bool:
        """--json, also before the command configured it (a bad flag or a config error with --json)."""
        end = self.argv.index("--") if "--" in self.argv else len(self.argv)
        return self.json or "--json" in self.argv[:end]


_current: contextvars.ContextVar[RunContext] = contextvars.ContextVar("kestrel_release_run")


def current() -> RunContext:
    """The running invocation's context. Outside any (a unit test calling a helper), a default one is made and
    kept for the rest of this thread's context, as the globals were kept for the process."""
    try:
        return _current.get()
    except LookupError:
        made = RunContext()
        _current.set(made)
        return made


def configure(**changes: Any) -> RunContext:
    """A flag parsed after the entry made the context (the root's -v, a command's --json): the current context is
    replaced by a copy with `changes` (its RunRecord shared), for the rest of this invocation."""
    changed = dataclasses.replace(current(), **changes)
    _current.set(changed)
    return changed


@contextlib.contextmanager
def using(run: RunContext | None) -> Iterator[RunContext]:
    """`run` is the current context inside the block, the one before after it (also when the block raises);
    None keeps the current one (a stage called without a context runs in its caller's)."""
    token = _current.set(run or current())
    try:
        yield _current.get()
    finally:
        _current.reset(token)


def inherit(run: RunContext) -> None:
    """A ThreadPoolExecutor's initializer: its worker threads run in `run` (a new thread starts without the
    caller's ContextVars): `ThreadPoolExecutor(initializer=run_context.inherit, initargs=(run_context.current(),))`."""
    _current.set(run)


def carried(fn: Callable[..., T]) -> Callable[..., T]:
    """`fn` bound to the caller's context, for a threading.Thread's target."""
    ctx = contextvars.copy_context()  # entered by one thread at a time: one carried function per thread

    def run_there(*args: Any, **kwargs: Any) -> T:
        return ctx.run(fn, *args, **kwargs)

    return run_there
