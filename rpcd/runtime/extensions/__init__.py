"""The extension host: discovering, loading and running extensions (``python_runner``: Python
modules, Pi's extension API in Python).

Doors: ``rpcd.core`` only; never the session core, which hands the runner what it needs.
"""
