"""The wire contract: attrs types, error codes, the converter, the OpenRPC document. No I/O."""
