"""Who may call a gateway (auth), what each caller sees (views) and how much (limits).

:class:`~argentic_tools.mcp.access.team.TeamAccess` joins the three for the gateway.
"""
