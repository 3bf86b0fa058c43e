"""A tool process that traces.

Run as ``python -m tests.support.otel_tool --broker URL --topic-prefix P SPANS``.

Installs the OpenTelemetry SDK with an exporter that appends every finished span to
the file SPANS as one JSON line, so a test can read the tool side's spans.
"""

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from argentic_tools import ToolContext, ToolError, serve_main, tool

SPANS = Path(sys.argv.pop())  # the last argument; the rest are serve_main's


class FileSpanExporter(SpanExporter):
    """Appends each span to SPANS as compact JSON (one line per span)."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with SPANS.open("a", encoding="utf-8") as out:
            for span in spans:
                out.write(json.dumps(json.loads(span.to_json())) + "\n")
        return SpanExportResult.SUCCESS


provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter()))
trace.set_tracer_provider(provider)


@tool
def traced(x: int, context: ToolContext) -> dict[str, object]:
    """Return x and the call's trace id, inside a span of the tool's own."""
    with trace.get_tracer("otel_tool").start_as_current_span("inner work"):
        return {"x": x, "trace_id": context.trace_id}


@tool
def broken() -> str:
    """Always fail."""
    raise ToolError("broken on purpose")


if __name__ == "__main__":
    serve_main([traced, broken], prog="otel_tool")
