"""The daemon's own requests to the client (trust prompt, extension UI, tool approval), correlated by
pygls' ``JsonRPCProtocol``: ids -> futures, the client's answers -> results, error answers -> ``RpcError``.

pygls is imported here only, and this module only when the daemon first asks the client something
(``Server.request_client``): importing pygls pulls in ``lsprotocol.types`` (~0.5 s of the start-up on
this machine), which no answer of the daemon needs. Every private member of pygls this module touches
was checked against the pinned pygls 2.1.1 and is marked so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from lsprotocol.types import ResponseError
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol, default_converter
from pygls.server import JsonRPCServer

from rpcd.protocol.errors import ErrorCode, RpcError
from rpcd.transport.envelope import Response


class _Protocol(JsonRPCProtocol):
    """pygls' protocol with its output redirected to the server."""

    sink: Callable[[Any], None]

    # pygls 2.1.1: ``_send_data`` is the one method ``send_request``/``notify`` write through.
    def _send_data(self, data: Any) -> None:
        if data:
            self.sink(data)


class ClientPeer:
    """Daemon->client requests over pygls' ``JsonRPCProtocol``. ``send_envelope`` gets each outgoing
    request as pygls' attrs message (``Server._send_envelope`` frames it)."""

    def __init__(self, send_envelope: Callable[[Any], None]) -> None:
        self._server = JsonRPCServer(_Protocol, default_converter)
        protocol = self._server.protocol
        assert isinstance(protocol, _Protocol)
        protocol.sink = send_envelope
        self._protocol = protocol

    def send(self, method: str, params: Any, msg_id: str) -> asyncio.Future[Any]:
        """Send the request now; the future resolves with the client's result."""
        future: asyncio.Future[Any] = self._protocol.send_request_async(method, params, msg_id=msg_id)
        return future

    @staticmethod
    async def result(future: asyncio.Future[Any]) -> Any:
        """The future's result; a client error answer raises ``RpcError`` with its code, message and data."""
        try:
            return await future
        except JsonRpcException as exc:
            raise RpcError(exc.code, exc.message, exc.data) from None

    def pending(self, msg_id: object) -> bool:
        # pygls 2.1.1: ``_request_futures`` holds the futures of requests not answered yet.
        return msg_id in self._protocol._request_futures

    def forget(self, msg_id: str) -> None:
        # pygls 2.1.1 never drops a request that timed out or was cancelled: these two tables leak otherwise.
        self._protocol._request_futures.pop(msg_id, None)
        self._protocol._result_types.pop(msg_id, None)

    def answer(self, response: Response) -> bool:
        """Deliver the client's answer; ``False`` if no request of ours has that id."""
        if response.id is None or not self.pending(response.id):
            return False
        error = None
        if response.error is not None:
            code, message = response.error.get("code"), response.error.get("message")
            error = ResponseError(
                code=code if isinstance(code, int) and not isinstance(code, bool) else int(ErrorCode.INTERNAL_ERROR),
                message=message if isinstance(message, str) else "",
                data=response.error.get("data"),
            )
        # pygls 2.1.1: ``_handle_response`` resolves the future (an error answer becomes JsonRpcException).
        self._protocol._handle_response(response.id, None if error is not None else response.result, error)
        return True
