"""The built-in coding tools (read, bash, edit, write, grep, find, ls), their truncation and path
rules, and the seam every tool call passes (``tool_call`` / ``tool_result``, approval policy).

Doors: may import ``rpcd.core`` only; the runtime imports the tools, never the reverse.
"""
