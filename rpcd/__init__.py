"""rpcd: a JSON-RPC 2.0 daemon over stdio hosting one replaceable agent session."""

__version__ = "0.1.0"
