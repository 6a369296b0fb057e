"""THE serialized host (seed §3-§9): one replaceable session behind one FIFO lock, its
availability state and fail-closed policy (``host``), flat failures with their context
(``failures``), and the narrow runtime port it knows the runtime through (``port``).

Doors: may import ``rpcd.core`` only. It knows the runtime solely through ``port`` (a
``typing.Protocol``: tests inject an in-memory fake) and knows nothing of JSON-RPC or pygls.
"""
