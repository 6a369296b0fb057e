"""The turn machinery: the agent loop (``agent``), the steering/follow-up queues (``queue``) and
automatic retry (``retry``).

Doors: ``rpcd.core``, ``rpcd.tools``, ``rpcd.providers``; never the session core above it (the
session hands the machinery what it needs).
"""
