"""rpcd: a JSON-RPC 2.0 daemon over stdio hosting one replaceable agent session.

The package is one import root with one room per responsibility. Each room's ``__init__``
says what it owns and which rooms it may import; ``tests/test_doors.py`` fails when a door is
broken. From the bottom up:

``core``       shared vocabulary: typed failures, value types, redaction, durable writes, JS string rules
``protocol``   the wire contract, no I/O (directory ``protocol/``, installed as ``rpcd.protocol``)
``transport``  stdio framing and the stdout guard; knows nothing of sessions
``store``      Pi session JSONL; imports nothing of the host or the runtime
``tools``      the built-in coding tools
``providers``  Pi's pi-ai in Python: provider APIs, catalog, credentials, models.json, model selection
``runtime``    Pi's AgentSessionRuntime in Python: the session core, with sub-rooms ``turns`` (agent
               loop, queue, retry), ``resources`` (settings, context files, trust, skills, templates,
               commands, system prompt), ``extensions`` (the extension host) and ``compaction``
``host``       THE serialized host and the narrow port it knows the runtime through
``wire``       the JSON-RPC endpoint (pygls confined here), handlers, event pump, client requests
``acp``        the Agent Client Protocol front
``daemon``     the composition root: flags, startup, bindings, journal, logs
``clients``    the Python client library and ``rpcctl`` (directory ``clients/``; stdlib only)

``safe_start``  how Python is started with no project on ``sys.path`` (stdlib ``os``/``sys`` only)

Importing ``rpcd`` itself imports nothing else, so ``rpcd.clients`` starts without pygls — except
under a ``python -m rpcd…`` that left the current directory on ``sys.path``: that one is started
again with ``-P`` right here, before a project's shadow of any module could be imported
(``rpcd.safe_start``).
"""

import sys

if sys.argv[:1] == ["-m"]:  # being located by ``python -m``: the only start that can be unsafe
    from rpcd.safe_start import restart_if_unsafe

    restart_if_unsafe()

__version__ = "0.1.0"
