"""A Prometheus scrape endpoint for the library's metrics (the ``[otel]`` extra).

Uses the OpenTelemetry SDK's Prometheus reader and ``prometheus_client``'s HTTP server:
no exposition format written here.
"""

import logging

from opentelemetry import metrics

logger = logging.getLogger("argentic_tools.telemetry")

_MISSING = (
    "the metrics endpoint needs the [otel] extra: pip install 'argentic-tools[otel]' "
    "(opentelemetry-sdk, opentelemetry-exporter-prometheus, prometheus-client)"
)
_served: dict[tuple[str, int], int] = {}


def start_metrics_server(port: int, host: str = "127.0.0.1") -> int:
    """Serve ``/metrics`` for Prometheus on ``host:port`` (0 picks a free port).

    Installs an OpenTelemetry SDK meter provider with a Prometheus reader unless the
    application installed an SDK provider already (then add a
    ``PrometheusMetricReader`` to it yourself; this only starts the HTTP server).
    Binds to loopback unless told otherwise: the metrics name your tools.

    Returns:
        The port it listens on.

    Raises:
        RuntimeError: The ``[otel]`` extra is not installed.
        OSError: The port cannot be bound.

    """
    if (host, port) in _served:
        return _served[(host, port)]
    try:
        import prometheus_client
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from opentelemetry.sdk.metrics import MeterProvider
    except ImportError as exc:
        raise RuntimeError(_MISSING) from exc
    if not isinstance(metrics.get_meter_provider(), MeterProvider):
        metrics.set_meter_provider(MeterProvider(metric_readers=[PrometheusMetricReader()]))
    else:
        logger.info("an OpenTelemetry SDK meter provider is installed: serving its registry")
    server, _thread = prometheus_client.start_http_server(port, addr=host)
    bound = int(server.server_address[1])
    _served[(host, port)] = bound
    return bound
