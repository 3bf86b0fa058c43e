"""Traces and metrics through the OpenTelemetry API, shared by both sides.

The library depends only on ``opentelemetry-api``: until the application installs
an SDK (the ``[otel]`` extra), every span and instrument here is a no-op that costs a
few microseconds per call. :func:`start_metrics_server` installs the SDK's Prometheus
reader and serves ``/metrics``.
"""

from opentelemetry.trace import Span

from .metrics import CallerMetrics, ToolMetrics, connection_reconnected
from .prometheus import start_metrics_server
from .tracing import (
    call_span,
    end_call_span,
    parent_context,
    trace_id_of,
    traceparent_of,
    use_span,
)

__all__ = [
    "CallerMetrics",
    "Span",
    "ToolMetrics",
    "call_span",
    "connection_reconnected",
    "end_call_span",
    "parent_context",
    "start_metrics_server",
    "trace_id_of",
    "traceparent_of",
    "use_span",
]
