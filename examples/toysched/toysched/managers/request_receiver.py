"""Pulls tokenized requests from the tokenizer and fans them out to the tp group."""

from __future__ import annotations

from typing import Any, List, Optional

import torch.distributed as dist
import zmq

from toysched.distributed import broadcast_pyobj


class RequestReceiver:
    def __init__(
        self,
        context: zmq.Context,
        recv_endpoint: str,
        ack_socket: zmq.Socket,
        tp_rank: int,
        tp_cpu_group: Optional[dist.ProcessGroup],
        expect_acks: bool = False,
    ) -> None:
        self.tp_rank = tp_rank
        self.tp_cpu_group = tp_cpu_group
        self.expect_acks = expect_acks
        self.recv_from_tokenizer = context.socket(zmq.PULL)
        self.recv_from_tokenizer.bind(recv_endpoint)
        self.socket = ack_socket

    def recv_requests(self) -> List[Any]:
        """Drain the tokenizer socket on tp rank 0, then broadcast the list to the group."""
        recv_reqs: Optional[List[Any]] = None
        if self.tp_rank == 0:
            recv_reqs = []
            while True:
                try:
                    # precision: NOBLOCK returns at once when the socket is empty
                    recv_req = self.recv_from_tokenizer.recv_pyobj(zmq.NOBLOCK)
                except zmq.ZMQError:
                    break
                recv_reqs.append(recv_req)
            if recv_reqs and self.expect_acks:
                # planted: blocking (blocking recv) -- waits for the detokenizer's ack, no NOBLOCK
                self.socket.recv()
        return broadcast_pyobj(recv_reqs, self.tp_rank, self.tp_cpu_group, src=0)
