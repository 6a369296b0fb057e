"""The extension host: the runner interface every runner implements (``runner``: what a session
needs of its extensions) and the Python one (``python_runner``: discovering, loading and running
Python modules, Pi's extension API in Python); the Node host of TypeScript extensions is the second.

Doors: ``rpcd.core`` only; never the session core, which hands the runner what it needs.
"""
