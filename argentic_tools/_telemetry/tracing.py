"""One span per call on each side, joined across processes by W3C trace context.

Names and attributes follow the OpenTelemetry GenAI conventions for tool calls: the
span ``execute_tool {gen_ai.tool.name}`` with ``gen_ai.operation.name`` =
``execute_tool``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
``gen_ai.tool.description``, and ``error.type`` (the error code) on failure. The
caller's span is a CLIENT span; the task carries its context as ``traceparent`` (and
``tracestate``), and the tool's SERVER span is its child.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

_TRACER = trace.get_tracer("argentic_tools")
"""A proxy: it follows whatever tracer provider the application installs, even later."""

_PROPAGATOR = TraceContextTextMapPropagator()

OPERATION = "execute_tool"


def call_span(
    tool_name: str,
    call_id: str | None,
    *,
    server: bool,
    description: str | None = None,
    parent: otel_context.Context | None = None,
) -> Span:
    """Start the span of one call (CLIENT on the caller's side, SERVER on the tool's)."""
    span = _TRACER.start_span(
        f"{OPERATION} {tool_name}",
        context=parent,
        kind=SpanKind.SERVER if server else SpanKind.CLIENT,
    )
    if span.is_recording():
        span.set_attribute("gen_ai.operation.name", OPERATION)
        span.set_attribute("gen_ai.tool.name", tool_name)
        if call_id is not None:
            span.set_attribute("gen_ai.tool.call.id", call_id)
        if description:
            span.set_attribute("gen_ai.tool.description", description[:1000])
    return span


def end_call_span(
    span: Span,
    error_type: str | None,
    message: str | None = None,
    *,
    tool_name: str | None = None,
    call_id: str | None = None,
) -> None:
    """End a call's span: ``error.type`` and an error status for a failed call."""
    if span.is_recording():
        if tool_name is not None:
            span.update_name(f"{OPERATION} {tool_name}")
            span.set_attribute("gen_ai.tool.name", tool_name)
        if call_id is not None:
            span.set_attribute("gen_ai.tool.call.id", call_id)
        if error_type is not None:
            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR, message))
    span.end()


def traceparent_of(span: Span) -> tuple[str | None, str | None]:
    """``(traceparent, tracestate)`` to send with a task; (None, None) without a trace."""
    if not span.get_span_context().is_valid:
        return None, None
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
    return carrier.get("traceparent"), carrier.get("tracestate")


def parent_context(traceparent: str | None, tracestate: str | None) -> otel_context.Context | None:
    """The caller's context from a task's ``traceparent`` (None when it has none)."""
    if not traceparent:
        return None
    carrier = {"traceparent": traceparent}
    if tracestate:
        carrier["tracestate"] = tracestate
    return _PROPAGATOR.extract(carrier)


def trace_id_of(traceparent: str | None) -> str | None:
    """The 32-hex-digit trace id in a W3C ``traceparent``, or None."""
    if not traceparent:
        return None
    parts = traceparent.split("-")
    if len(parts) < 4 or len(parts[1]) != 32 or parts[1] == "0" * 32:
        return None
    return parts[1]


@contextmanager
def use_span(span: Span) -> Iterator[None]:
    """Make ``span`` the current one (spans a tool starts become its children)."""
    if not span.is_recording():
        yield
        return
    token = otel_context.attach(trace.set_span_in_context(span))
    try:
        yield
    finally:
        otel_context.detach(token)
