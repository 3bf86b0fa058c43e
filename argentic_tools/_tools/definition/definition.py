"""Writing tools: the ``@tool`` decorator and the class-based ``BaseTool``.

Both produce the same thing, a :class:`BaseTool` that a :class:`~argentic_tools.ToolService`
(or ``BaseTool.register`` with your own :class:`~argentic_tools.Messager`) serves over MQTT.
"""

import asyncio
import contextvars
import inspect
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

import anyio.to_thread
from pydantic import BaseModel

from ..._errors import ToolDefinitionError
from ..._protocol.topics import (
    DEFAULT_CALL_TOPIC_BASE,
    DEFAULT_REGISTER_TOPIC,
    DEFAULT_RESPONSE_TOPIC_BASE,
    DEFAULT_STATUS_TOPIC,
    Topics,
    tool_name_problem,
)
from ..call.context import ToolContext, current_context
from ..call.control import CallControl, collect_chunks, collect_chunks_sync
from ..serving.endpoint import ToolEndpoint
from .options import ToolOptions, checked_annotations
from .schema import model_schema, output_schema, signature_model

if TYPE_CHECKING:
    from ..._transport import Messager

F = TypeVar("F", bound=Callable[..., Any])


class BaseTool(ABC):
    """A tool written as a class, shaped like Argentic's ``BaseTool``.

    Subclass it, implement ``async _execute(self, **kwargs)``, and either give
    it to a :class:`~argentic_tools.ToolService` or call :meth:`register` with
    a connected :class:`~argentic_tools.Messager`.

    Args:
        name: Tool name (no ``/``, ``+``, ``#`` or control characters).
        manual: Description the LLM reads.
        api: JSON Schema of the arguments as a JSON string; derived from
            ``argument_schema`` when empty.
        argument_schema: pydantic model that validates the arguments.
        messager: Connection to serve on; a ToolService supplies its own.
        tags: Discovery tags.
        output_schema: JSON Schema of a successful result, if declared.
        examples: ``{"input": {...}, "output": ...}`` examples.
        max_concurrency: Calls served at once; more wait their turn.
        tool_id: Pin the tool id (for ACLs); a random one otherwise.
        debug: Send tracebacks with failures.
        annotations: Hints for clients, as MCP defines them: ``readOnlyHint``,
            ``destructiveHint``, ``idempotentHint``, ``openWorldHint`` (booleans) and
            ``title``; exported to MCP clients with the tool.

    """

    def __init__(
        self,
        name: str,
        manual: str,
        api: str,
        argument_schema: type[BaseModel],
        messager: "Messager | None" = None,
        *,
        tags: Iterable[str] = (),
        output_schema: dict[str, Any] | None = None,
        examples: Sequence[Mapping[str, Any]] = (),
        max_concurrency: int | None = None,
        tool_id: str | None = None,
        debug: bool = False,
        annotations: Mapping[str, Any] | None = None,
    ) -> None:
        options = ToolOptions.packed(tags, examples, max_concurrency, tool_id, annotations)
        self._define_tool(
            name,
            manual,
            api,
            argument_schema,
            options,
            messager=messager,
            output_schema=output_schema,
            debug=debug,
        )

    def _define_tool(
        self,
        name: str,
        manual: str,
        api: str,
        argument_schema: type[BaseModel],
        options: ToolOptions,
        *,
        messager: "Messager | None" = None,
        output_schema: dict[str, Any] | None = None,
        debug: bool = False,
    ) -> None:
        """Check and keep the definition: ``__init__``'s work, with the options packed."""
        problem = tool_name_problem(name)
        if problem:
            raise ToolDefinitionError(f"tool {name!r}: {problem}")
        options.check(name)
        self.name = name
        self.manual = manual
        self.argument_schema = argument_schema
        if api and api.strip() not in ("", "{}"):
            try:
                self.input_schema: dict[str, Any] = json.loads(api)
            except json.JSONDecodeError as exc:
                raise ToolDefinitionError(f"tool {name!r}: api is not valid JSON: {exc}") from None
            self.api = api
        else:
            self.input_schema = model_schema(argument_schema)
            self.api = json.dumps(self.input_schema, separators=(",", ":"))
        self.messager = messager
        self.tags = list(options.tags)
        self.output_schema = output_schema
        self.examples = [dict(example) for example in options.examples]
        self.max_concurrency = options.max_concurrency
        self.pinned_id = options.tool_id
        self.debug = debug
        self.annotations = checked_annotations(name, options.annotations)
        self._endpoint: ToolEndpoint | None = None

    @property
    def id(self) -> str | None:
        """The id this tool is registered under by :meth:`register` (else its pinned id).

        A :class:`~argentic_tools.ToolService` never changes the tool objects it
        serves (the same object can be served by two services); its endpoints know
        the ids they serve under.
        """
        return self._endpoint.tool_id if self._endpoint is not None else self.pinned_id

    @abstractmethod
    async def _execute(self, **kwargs: Any) -> Any:
        """Run the tool with validated arguments and return a JSON-serialisable result."""

    @property
    def context(self) -> ToolContext | None:
        """Context of the call being served by the current task (None outside a call)."""
        return current_context()

    def validate_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validate ``arguments`` with ``argument_schema``; returns the keyword arguments.

        Raises:
            pydantic.ValidationError: The arguments do not match.

        """
        return self.argument_schema.model_validate(arguments).model_dump()

    async def warm_up(self) -> None:  # noqa: B027 - an optional hook, not abstract
        """Prepare to serve (called once before the tool registers); nothing by default."""

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        """Validate ``arguments`` and run the tool (what serving a call does)."""
        return await self._execute(**self.validate_arguments(arguments))

    async def register(
        self,
        registration_topic: str = DEFAULT_REGISTER_TOPIC,
        status_topic: str = DEFAULT_STATUS_TOPIC,
        call_topic_base: str = DEFAULT_CALL_TOPIC_BASE,
        response_topic_base: str = DEFAULT_RESPONSE_TOPIC_BASE,
        *,
        confirm_timeout: float = 1.0,
    ) -> str:
        """Subscribe to this tool's call topic, register, and wait for a manager's confirmation.

        The tool is subscribed before any manager can offer it, so no first
        call is lost. Without a confirmation within ``confirm_timeout`` the tool
        keeps serving and registers again whenever a manager announces itself.

        Returns:
            The tool id.

        Raises:
            RuntimeError: No messager was given.
            RegistrationError: A manager refused the registration.

        """
        if self.messager is None:
            raise RuntimeError(f"tool {self.name!r} has no messager to register with")
        topics = Topics(registration_topic, call_topic_base, response_topic_base, status_topic)
        if self._endpoint is not None:
            await self._endpoint.stop(grace_period=0)
        self._endpoint = ToolEndpoint(self, self.messager, topics)
        return await self._endpoint.start(confirm_timeout=confirm_timeout)

    async def unregister(self) -> None:
        """Tell managers this tool is gone and stop serving calls."""
        if self._endpoint is not None:
            endpoint, self._endpoint = self._endpoint, None
            await endpoint.stop()


class FunctionTool(BaseTool):
    """A :class:`BaseTool` around a ``@tool`` function."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        tags: Iterable[str] = (),
        examples: Sequence[Mapping[str, Any]] = (),
        max_concurrency: int | None = None,
        tool_id: str | None = None,
        annotations: Mapping[str, Any] | None = None,
    ) -> None:
        options = ToolOptions.packed(tags, examples, max_concurrency, tool_id, annotations)
        self._wrap(func, name, description, options)

    @classmethod
    def _with_options(
        cls,
        func: Callable[..., Any],
        name: str | None,
        description: str | None,
        options: ToolOptions,
    ) -> "FunctionTool":
        """A FunctionTool like ``FunctionTool(func, name=..., ...)``, with the options packed."""
        built = cls.__new__(cls)
        built._wrap(func, name, description, options)
        return built

    def _wrap(
        self,
        func: Callable[..., Any],
        name: str | None,
        description: str | None,
        options: ToolOptions,
    ) -> None:
        tool_name = name if name is not None else func.__name__
        problem = tool_name_problem(tool_name)
        if problem:
            raise ToolDefinitionError(f"tool {tool_name!r}: {problem}")
        model, context_param = signature_model(func, tool_name, ToolContext)
        text = description if description is not None else inspect.getdoc(func) or ""
        self._define_tool(
            tool_name,
            text.strip(),
            "",
            model,
            options,
            output_schema=output_schema(func, tool_name),
        )
        self.func = func
        self.context_param = context_param
        self.is_async = inspect.iscoroutinefunction(func)
        self.is_async_generator = inspect.isasyncgenfunction(func)
        self.is_generator = inspect.isgeneratorfunction(func)

    async def warm_up(self) -> None:
        """Start the worker thread now, so the first call does not pay for it (~30 ms)."""
        if not (self.is_async or self.is_async_generator):
            await anyio.to_thread.run_sync(lambda: None)

    def validate_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validate with the signature's model, keeping nested models as model instances."""
        validated = self.argument_schema.model_validate(arguments)
        return {name: getattr(validated, name) for name in type(validated).model_fields}

    async def _execute(self, **kwargs: Any) -> Any:
        call = self.context
        if self.context_param is not None:
            kwargs[self.context_param] = call
        control = call._control if call is not None else None
        if self.is_async:
            return await self.func(**kwargs)
        if self.is_async_generator:
            return await collect_chunks(self.func(**kwargs), control)
        # Sync tools run in a worker thread so a blocking one never stalls the connection.
        context = contextvars.copy_context()
        if control is None:
            return await anyio.to_thread.run_sync(
                lambda: context.run(self._run_sync, None, kwargs), abandon_on_cancel=True
            )

        def run() -> Any:
            if not control.thread_starts():
                return None  # cancelled while it waited for a thread
            try:
                return context.run(self._run_sync, control, kwargs)
            finally:
                control.thread_returned()

        try:
            return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        except asyncio.CancelledError:
            # The thread cannot be stopped: it sees context.cancelled, and the call keeps
            # its concurrency slot until the thread returns. Its result is dropped.
            await control.wait_for_thread()
            raise

    def _run_sync(self, control: CallControl | None, kwargs: dict[str, Any]) -> Any:
        if self.is_generator:
            return collect_chunks_sync(self.func(**kwargs), control)
        return self.func(**kwargs)


TOOL_ATTRIBUTE = "__argentic_tool__"


@overload
def tool(func: F, /) -> F: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    tags: Iterable[str] = (),
    examples: Sequence[Mapping[str, Any]] = (),
    max_concurrency: int | None = None,
    tool_id: str | None = None,
    annotations: Mapping[str, Any] | None = None,
) -> Callable[[F], F]: ...


def tool(
    func: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    tags: Iterable[str] = (),
    examples: Sequence[Mapping[str, Any]] = (),
    max_concurrency: int | None = None,
    tool_id: str | None = None,
    annotations: Mapping[str, Any] | None = None,
) -> F | Callable[[F], F]:
    """Turn a function into a tool; returns the function unchanged.

    The tool's name is the function's name, its description the docstring,
    and its argument schema comes from the type hints (``Annotated[int,
    Field(description=...)]``, defaults, ``Literal``, enums, pydantic models).
    A parameter annotated :class:`ToolContext` receives the call's context.
    ``annotations`` are MCP's hints for clients (``{"readOnlyHint": True}``).
    Sync functions run in a worker thread. A generator function (``async def``
    with ``yield``, or ``def`` with ``yield``) streams: each yielded chunk reaches a
    caller using ``stream_tool`` as it comes, and the result is the list of chunks.

    Raises:
        ToolDefinitionError: At decoration time, when the signature cannot
            become a schema (``*args``, unsupported annotations, bad name).

    Example:
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> add(2, 3)
        5

    """
    options = ToolOptions.packed(tags, examples, max_concurrency, tool_id, annotations)

    def decorate(fn: F) -> F:
        built = FunctionTool._with_options(fn, name, description, options)
        setattr(fn, TOOL_ATTRIBUTE, built)
        return fn

    if func is not None:
        return decorate(func)
    return decorate


def as_tool(obj: Any) -> BaseTool:
    """Return the :class:`BaseTool` for a ``@tool`` function, a BaseTool, or a BaseTool class.

    A fresh :class:`FunctionTool` is built each time for functions, so two
    services hosting the same function do not share state.

    Raises:
        ToolDefinitionError: ``obj`` is none of these.

    """
    if isinstance(obj, BaseTool):
        return obj
    if isinstance(obj, type) and issubclass(obj, BaseTool):
        try:
            return obj()  # type: ignore[call-arg]
        except TypeError as exc:
            raise ToolDefinitionError(
                f"cannot instantiate tool class {obj.__qualname__} without arguments: {exc}"
            ) from None
    built = getattr(obj, TOOL_ATTRIBUTE, None)
    if isinstance(built, FunctionTool):
        # From the built tool's attributes as they are now (a user may have changed them).
        return FunctionTool(
            built.func,
            name=built.name,
            description=built.manual,
            tags=built.tags,
            examples=built.examples,
            max_concurrency=built.max_concurrency,
            tool_id=built.pinned_id,
            annotations=built.annotations,
        )
    if callable(obj):
        return FunctionTool._with_options(obj, None, None, ToolOptions())
    raise ToolDefinitionError(
        f"{obj!r} is not a tool: use a @tool function, a BaseTool instance or a BaseTool class"
    )
