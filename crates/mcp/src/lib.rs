//! toolgate over the Model Context Protocol: server surfaces (stdio, streamable HTTP) and upstream MCP servers as a tool provider.
