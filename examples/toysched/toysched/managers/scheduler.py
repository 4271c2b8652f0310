"""The scheduler: one process per rank, every rank runs the same event loop."""

from __future__ import annotations

import contextlib
import gc
import logging
import queue
import threading
import time
from typing import Any, Iterator, List, Optional

import torch
import torch.distributed as dist
import zmq

from toysched.distributed import get_pp_group, get_tp_group
from toysched.distributed.barrier import PollBasedBarrier
from toysched.managers.grammar import GrammarManager
from toysched.managers.io_struct import (
    BatchResult,
    FlushCacheReqInput,
    GenerateReqInput,
    PauseGenerationReqInput,
    Req,
    ScheduleBatch,
)
from toysched.managers.memory_mixin import SchedulerMemoryMixin
from toysched.managers.request_receiver import RequestReceiver
from toysched.server_args import ServerArgs
from toysched.utils import TypeBasedDispatcher
from toysched.utils.logs import configure_logger

from ..mem_cache.radix_cache import RadixCache
from .scheduler_pp_mixin import SchedulerPPMixin

logger = logging.getLogger(__name__)


class Scheduler(SchedulerPPMixin, SchedulerMemoryMixin):
    """Receives requests, forms batches and runs them; one instance per rank."""

    def __init__(
        self, server_args: ServerArgs, gpu_id: int, tp_rank: int, pp_rank: int, model_runner: Any
    ) -> None:
        super().__init__()
        self.server_args = server_args
        self.gpu_id = gpu_id
        self.device = torch.device(f"cuda:{gpu_id}")
        self.tp_rank = tp_rank
        self.tp_size = server_args.tp_size
        self.pp_rank = pp_rank
        self.pp_size = server_args.pp_size
        self.model_runner = model_runner
        self.tp_group = get_tp_group()
        self.pp_group = get_pp_group()

        context = zmq.Context(2)
        ack_socket = context.socket(zmq.PULL)
        ack_socket.connect(server_args.ack_endpoint)
        self.request_receiver = RequestReceiver(
            context,
            server_args.scheduler_input_endpoint,
            ack_socket,
            tp_rank,
            self.tp_group.cpu_group,
            expect_acks=server_args.expect_acks,
        )
        self.tree_cache = RadixCache(server_args.max_total_tokens, tp_rank, self.tp_group.cpu_group)
        self.grammar_manager = GrammarManager(self.tp_group.cpu_group, self.tp_size)
        self.idle_barrier = PollBasedBarrier(group=self.tp_group.cpu_group)

        self.waiting_queue: List[Req] = []
        self.running_reqs: List[Req] = []
        self.round_ct = 0
        self.num_generated_tokens = 0
        self.global_num_tokens = 0
        self._paused = False
        self._resume_queue: queue.Queue[bool] = queue.Queue()
        self._weight_loader_thread: Optional[threading.Thread] = None
        self._request_dispatcher = TypeBasedDispatcher(
            [
                (GenerateReqInput, self.handle_generate_request),
                (FlushCacheReqInput, self.flush_cache),
                (PauseGenerationReqInput, self.pause_generation),
            ]
        )

        self._blocked_on: Optional[str] = None
        self._blocked_since = 0.0
        self.watchdog_thread = threading.Thread(target=self.watchdog_loop, daemon=True)
        self.watchdog_thread.start()

    # ---- watchdog ----

    @contextlib.contextmanager
    def on_blocked_recv(self, name: str) -> Iterator[None]:
        """Stamp a wait so that the watchdog can name it if this rank stalls there."""
        self._blocked_on = name
        self._blocked_since = time.monotonic()
        try:
            yield
        finally:
            self._blocked_on = None

    def watchdog_loop(self) -> None:
        """Runs on its own thread and reports a stamped wait that lasts too long."""
        while True:
            # precision: watchdog thread (thread target, a callback edge), never in a round
            time.sleep(self.server_args.watchdog_interval_s)
            name = self._blocked_on
            waited = time.monotonic() - self._blocked_since
            if name is not None and waited > self.server_args.watchdog_timeout_s:
                logger.warning("Watchdog: blocked in %s for %.1f s", name, waited)

    # ---- request handlers (called through the dispatcher) ----

    def handle_generate_request(self, recv_req: GenerateReqInput) -> None:
        req = Req(recv_req.rid, recv_req.input_ids, recv_req.grammar_spec)
        if req.grammar_spec is not None:
            self.grammar_manager.submit(req)
        else:
            self.waiting_queue.append(req)

    def flush_cache(self, recv_req: FlushCacheReqInput) -> None:
        self.tree_cache.reset()

    def pause_generation(self, recv_req: PauseGenerationReqInput) -> None:
        self._paused = True

    def resume_generation(self) -> None:
        """Called from the HTTP control thread."""
        self._resume_queue.put(True)

    def update_weights_async(self, path: str) -> None:
        self._weight_loader_thread = threading.Thread(
            target=self.model_runner.load_weights, args=(path,)
        )
        self._weight_loader_thread.start()

    # ---- one round ----

    def process_input_requests(self, recv_reqs: List[Any]) -> None:
        for recv_req in recv_reqs:
            self._request_dispatcher(recv_req)
        if self._paused:
            # planted: blocking (queue get) -- waits for resume_generation, no timeout
            self._resume_queue.get()
            self._paused = False

    def get_num_allocatable_reqs(self, running_bs: int) -> int:
        return self.tree_cache.available_size() // self.server_args.tokens_per_req - running_bs

    def _local_admit_limit(self) -> int:
        limit = self.get_num_allocatable_reqs(len(self.running_reqs))
        return min(limit, self.server_args.max_prefill_reqs)

    def get_next_batch_to_run(self) -> Optional[ScheduleBatch]:
        batch = None
        limit = self._local_admit_limit()
        # planted: rank-divergent collective -- `limit` is this rank's free KV room; a rank
        # whose pool is full skips the broadcast its peers are waiting in
        if limit > 0:
            reqs = self.waiting_queue[:limit]
            need = sum(len(req.input_ids) for req in reqs)
            self.tree_cache.evict(self.tree_cache.sync_evict_plan(need))
            del self.waiting_queue[:limit]
            batch = ScheduleBatch(reqs=reqs)
        # not a hazard: server_args is identical on every rank
        if self.server_args.enable_dp_attention:
            self._prepare_dp_attn_batch(batch)
        self._maybe_collect_garbage()
        return batch

    def _prepare_dp_attn_batch(self, batch: Optional[ScheduleBatch]) -> None:
        local = batch.num_tokens if batch is not None else 0
        num_tokens = torch.tensor([local], dtype=torch.int64, device="cpu")
        dist.all_reduce(num_tokens, op=dist.ReduceOp.MAX, group=self.tp_group.cpu_group)
        self.global_num_tokens = int(num_tokens[0])

    def _maybe_collect_garbage(self) -> None:
        if self.server_args.gc_each_round:
            # planted: blocking (gc) -- a full collection before the budget all-reduce
            gc.collect()

    def run_batch(self, batch: ScheduleBatch) -> BatchResult:
        input_ids = torch.tensor(batch.input_ids, dtype=torch.int64, device=self.device)
        logits = self.model_runner.forward(input_ids)
        next_token_ids = torch.argmax(logits, dim=-1)
        # planted: blocking (device sync) -- waits for the whole forward on this rank
        torch.cuda.synchronize(self.device)
        return BatchResult(next_token_ids=next_token_ids)

    def process_batch_result(self, batch: ScheduleBatch, result: BatchResult) -> None:
        batch.output_ids = result.next_token_ids
        # precision: .item() on a CPU tensor is a plain read, no device sync
        self.num_generated_tokens += torch.tensor([len(batch.reqs)], device="cpu").item()
        self.running_reqs = [req for req in batch.reqs if not req.finished]
        self._granted_bytes = len(self.running_reqs) * self.server_args.bytes_per_slot

    def _on_idle(self) -> None:
        # planted: blocking (sleep) -- an idle rank backs off before the idle barrier
        time.sleep(self.server_args.idle_sleep_s)

    def _poll_profile_trigger(self) -> None:
        path = self.server_args.profile_trigger_path
        if not path:
            return
        try:
            # planted: blocking (file io) -- reads a trigger file on a shared filesystem
            with open(path) as f:
                command = f.read().strip()
        except FileNotFoundError:
            return
        logger.info(f"Profiler trigger {command!r} read from {path}")

    def _reap_loader_thread(self) -> None:
        thread = self._weight_loader_thread
        if thread is not None and not thread.is_alive():
            # precision: join() on a thread already known to be dead returns at once
            thread.join()
            self._weight_loader_thread = None

    def round_barrier(self) -> None:
        """End-of-scheduling bookkeeping; despite the name nothing here waits for anyone."""
        self.round_ct += 1

    def _trace_round(self) -> None:
        if self.server_args.trace_path:
            # precision: file io in the round tail, after the round's last collective
            with open(self.server_args.trace_path, "a") as f:
                f.write(f"{self.round_ct} {len(self.waiting_queue)} {len(self.running_reqs)}\n")

    def event_loop_normal(self) -> None:
        """A normal scheduler loop: receive, schedule, run, then agree on idleness."""
        while True:
            with self.on_blocked_recv("recv_requests"):
                recv_reqs = self.request_receiver.recv_requests()
            self.process_input_requests(recv_reqs)
            with self.on_blocked_recv("grammar_sync"):
                self.waiting_queue.extend(self.grammar_manager.poll_ready())
            with self.on_blocked_recv("schedule"):
                batch = self.get_next_batch_to_run()
                self._update_uniform_pool_budget()

            if batch is not None:
                result = self.run_batch(batch)
                self.process_batch_result(batch, result)
            else:
                self._on_idle()
                self.idle_barrier.local_arrive()
            self._poll_profile_trigger()
            self._reap_loader_thread()
            self.round_barrier()
            with self.on_blocked_recv("idle_barrier"):
                all_idle = self.idle_barrier.poll_global_arrive()

            # round tail: after the round's last collective
            if all_idle:
                self._release_pool_slack()
            self._trace_round()


def run_scheduler_process(
    server_args: ServerArgs, gpu_id: int, tp_rank: int, pp_rank: int, model_runner: Any
) -> None:
    configure_logger(tp_rank, pp_rank)
    scheduler = Scheduler(server_args, gpu_id, tp_rank, pp_rank, model_runner)
    if server_args.pp_size > 1:
        scheduler.event_loop_pp()
    else:
        scheduler.event_loop_normal()
