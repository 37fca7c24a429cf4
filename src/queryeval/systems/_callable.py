"""A system given as a Python callable `package.module:function` (sync or async)."""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

from pydantic import ValidationError

from queryeval._registry import import_module_from
from queryeval.cases import Attempt, Case, Output
from queryeval.errors import InputError
from queryeval.systems._predictions import ANSWER, TextFields, parse_output, unusable


def import_callable(spec: str, base_dir: Path | None = None) -> Callable[..., Any]:
    """Resolve `pkg.mod:function`; the suite's folder and the working folder are importable
    while it imports (`sys.path` is left as it was)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise InputError(f"expected 'package.module:function', got {spec!r}", where="callable")
    folders = [str(base_dir) if base_dir else "", str(Path.cwd())]
    try:
        module = import_module_from(module_name, folders)
    except ImportError as exc:
        raise InputError(f"cannot import {module_name!r}: {exc}", where="callable") from exc
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise InputError(f"{module_name!r} has no attribute {attr!r}", where="callable")
    if not callable(obj):
        raise InputError(f"{spec!r} is not callable", where="callable")
    return obj


def coerce_output(value: Any, text_fields: TextFields = ANSWER) -> Output:
    """Whatever the callable returned, as an Output (Output, Attempt, dict or str). A plain
    string is the text of the suite's task (`text_fields`: the query of a text-to-SQL suite,
    the answer of a RAG one)."""
    if isinstance(value, Output):
        return value
    if isinstance(value, Attempt):
        return Output(attempts=[value])
    return parse_output(value, text_fields)


def in_daemon_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> asyncio.Future[Any]:
    """`fn(*args, **kwargs)` in a daemon thread of its own, as a future of the running loop.

    A thread cannot be killed: one that never returns is abandoned when the caller stops
    waiting (a timeout cancels the future). Being a daemon and outside every executor, it is
    joined neither by `asyncio.run` (which joins the loop's default executor) nor at
    interpreter exit, so a hung call holds up neither the run nor the process."""
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():  # cancelled: the caller stopped waiting
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def call() -> None:
        value, error = None, None
        try:
            value = context.run(fn, *args, **kwargs)
        except BaseException as exc:  # handed to the awaiting side, as to_thread would
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=call, name="queryeval-callable", daemon=True).start()
    return future


class CallableSystem:
    """Calls `fn(case, **params)`; a sync callable runs in a daemon thread of its own per
    call (`in_daemon_thread`), so its `timeout_s` binds even when it never returns. Crashes,
    timeouts and outputs of the wrong type become `Output.error` (the system's failure),
    never exceptions."""

    def __init__(
        self,
        fn: Callable[..., Any],
        params: dict[str, Any] | None = None,
        timeout_s: float | None = None,
        text_fields: TextFields = ANSWER,
    ) -> None:
        self.fn = fn
        self.params = params or {}
        self.timeout_s = timeout_s
        self.text_fields = text_fields
        self.is_async = inspect.iscoroutinefunction(fn)

    async def generate(self, case: Case) -> Output:
        """Run the system on one case."""
        import asyncio  # here, not at import: runs on saved predictions never need it

        start = time.perf_counter()
        try:
            if self.is_async:
                call = self.fn(case, **self.params)
            else:
                call = in_daemon_thread(self.fn, case, **self.params)
            value = await asyncio.wait_for(call, self.timeout_s)
        except TimeoutError:
            output = Output(error=f"timed out after {self.timeout_s} s", failure="system_timeout")
        except Exception as exc:
            tb = traceback.format_exception_only(type(exc), exc)[-1].strip()
            output = Output(error=f"system crashed: {tb}", failure="crashed")
        else:
            try:
                output = coerce_output(value, self.text_fields)
            except (ValidationError, ValueError) as exc:
                output = unusable(exc)
        if output.latency_s is None:
            output.latency_s = time.perf_counter() - start
        return output
