"""The JSON documents are written in large pieces, and are exactly what `json.dump` with two
spaces of indent and sorted keys writes, however many pieces the document makes."""

from __future__ import annotations

import io
import json

from rankguard.commands._shared import _CHUNKS_PER_WRITE, emit_json


class Counting(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def test_a_document_of_many_pieces_is_written_whole_in_few_writes() -> None:
    payload = {
        "findings": [{"rule": "r", "line": i, "chain": [{"f": str(i)}]} for i in range(9000)]
    }
    out = Counting()
    emit_json(payload, out)
    assert out.getvalue() == json.dumps(payload, indent=2, sort_keys=True) + "\n"
    pieces = sum(1 for _ in json.JSONEncoder(indent=2, sort_keys=True).iterencode(payload))
    assert pieces > 2 * _CHUNKS_PER_WRITE  # more than one full batch, and a partial one
    assert out.writes == pieces // _CHUNKS_PER_WRITE + 1


def test_an_empty_document() -> None:
    out = Counting()
    emit_json({}, out)
    assert out.getvalue() == "{}\n"
    assert out.writes == 1
