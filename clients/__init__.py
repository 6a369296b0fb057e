"""Bundled clients: a Python library + CLI (no pygls import) and a Node editor-side example."""
