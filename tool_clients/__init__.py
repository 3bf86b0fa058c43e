"""Example tool microservices built on argentic_tools (one runnable module per service)."""
