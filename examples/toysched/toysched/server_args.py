"""Server arguments: identical on every rank."""

from dataclasses import dataclass
from typing import Optional


@dataclass
class ServerArgs:
    tp_size: int = 1
    pp_size: int = 1
    enable_dp_attention: bool = False
    scheduler_input_endpoint: str = "ipc:///tmp/toysched_input"
    ack_endpoint: str = "ipc:///tmp/toysched_ack"
    expect_acks: bool = False
    max_total_tokens: int = 65536
    max_prefill_reqs: int = 32
    tokens_per_req: int = 512
    bytes_per_slot: int = 1 << 20
    max_pool_width: int = 4096
    pool_target_bytes: int = 8 << 30
    gc_each_round: bool = False
    idle_sleep_s: float = 0.005
    profile_trigger_path: Optional[str] = None
    trace_path: Optional[str] = None
    watchdog_interval_s: float = 5.0
    watchdog_timeout_s: float = 300.0
