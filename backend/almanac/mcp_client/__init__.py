"""MCP servers as a toolset: configuration, lifecycle, restarts, timeouts, tool registration.

The only package that imports the `mcp` SDK. `McpClient` (client.py) is what the composition root
builds (factory.py) and the lifespan starts and stops; `McpServer` (server.py) keeps one server
running; config.py, names.py, results.py and breaker.py are pure.
"""

from almanac.mcp_client.breaker import RestartPolicy
from almanac.mcp_client.client import McpClient, ServerStatus
from almanac.mcp_client.factory import build_mcp_client
from almanac.mcp_client.offline_rules import teach

__all__ = ["McpClient", "RestartPolicy", "ServerStatus", "build_mcp_client", "teach"]
