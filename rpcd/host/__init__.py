"""THE serialized host (seed §3-§9): one replaceable session behind one FIFO taken at arrival and
run by the host's own worker task (``queue``), its state as one transition table and fail-closed
policy (``host``), flat failures with their context and the Phase enum (``failures``), and the
narrow runtime port it knows the runtime through (``port``).

Doors: may import ``rpcd.core`` only. It knows the runtime solely through ``port`` (a
``typing.Protocol``: tests inject an in-memory fake) and knows nothing of JSON-RPC or pygls.
"""
