"""Messages from the tokenizer, and the scheduler's own batch types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional

import torch


@dataclass
class GenerateReqInput:
    rid: str
    input_ids: List[int]
    grammar_spec: Optional[str] = None


@dataclass
class FlushCacheReqInput:
    pass


@dataclass
class PauseGenerationReqInput:
    pass


@dataclass
class Req:
    rid: str
    input_ids: List[int]
    grammar_spec: Optional[str] = None
    require_sync: bool = False
    grammar: Any = None
    finished: bool = False


@dataclass
class ScheduleBatch:
    reqs: List[Req]
    output_ids: Optional[torch.Tensor] = None

    @property
    def input_ids(self) -> List[int]:
        return [tok for req in self.reqs for tok in req.input_ids]

    @property
    def num_tokens(self) -> int:
        return sum(len(req.input_ids) for req in self.reqs)


@dataclass
class BatchResult:
    next_token_ids: torch.Tensor
