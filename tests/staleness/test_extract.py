"""The `arith` fact: expression shapes and the caching forms the extractor recognises."""

from __future__ import annotations

import ast
import pickle
import textwrap

from rankguard.summary.arith import FACT_VERSION, extract_arith


def _facts(src: str) -> dict:
    src = textwrap.dedent(src).lstrip("\n")
    return extract_arith(ast.parse(src), src)


def test_shapes_and_pickles() -> None:
    fact = _facts(
        """
        GB = 1 << 30
        def f(self, x):
            y = -x + min(self.a, 2 * GB) - g()[0]
            free, _ = h()
            return y
        """
    )
    assert fact["version"] == FACT_VERSION
    assert fact["consts"] == {"GB": 1 << 30}
    fn = fact["functions"]["f"]
    assert fn.params == ("self", "x")
    kind, line, targets, value, tag = fn.events[0]
    assert (kind, line, targets, tag) == ("=", 3, (("r", ("y",)),), None)
    assert value[0] == "b" and value[1] == "-"
    assert value[2][2] == ("u", "-", ("r", ("x",)))
    assert value[3] == ("i", ("c", ("g",), (), (), 3, 35, None), 0)
    assert fn.events[1][2] == (("t", (("r", ("free",)), ("r", ("_",)))),)
    assert pickle.loads(pickle.dumps(fact)) == fact


def test_cache_forms_are_tagged() -> None:
    fact = _facts(
        """
        import functools, time
        _M = {}
        class C:
            @functools.cached_property
            def p(self):
                return self.x - self.y
            def timed(self):
                now = time.monotonic()
                if now - self._at >= 30:
                    self._v = probe()
                    self._at = now
                return self._v
            def memo(self):
                if self._w is None:
                    self._w = probe()
                return self._w
            def class_memo(self, k):
                hit = C._memo.get(k)
                if hit is not None:
                    return hit
                C._memo[k] = probe()
                return C._memo[k]
        def dict_memo(k):
            if k not in _M:
                _M[k] = probe()
            return _M[k]
        """
    )
    fns = fact["functions"]
    assert fns["C.p"].returns_text == "self.x - self.y"  # decorated: the kept value's name
    tags = {name: [e[4][:2] for e in fn.events if e[0] == "=" and e[4]] for name, fn in fns.items()}
    assert tags["C.timed"] == [("time-cadence", "now - self._at >= 30")]
    assert tags["C.memo"] == [("memo", "self._w is None")]
    assert tags["dict_memo"] == [("memo", "k not in _M")]
    assert tags["C.class_memo"] == [("memo", "C._memo.get(k)")]


def test_nested_function_qualnames() -> None:
    fact = _facts(
        """
        def outer():
            def inner():
                return 1 + x
            return inner
        """
    )
    assert set(fact["functions"]) == {"", "outer", "outer.<locals>.inner"}
