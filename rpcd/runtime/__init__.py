"""Session runtime (Pi's AgentSessionRuntime in Python)."""
