"""Small helpers shared by the managers."""

from typing import Any, Callable, List, Tuple, Type


class TypeBasedDispatcher:
    """Call the handler registered for the type of each incoming request."""

    def __init__(self, mapping: List[Tuple[Type, Callable]]) -> None:
        self._mapping = mapping

    def __call__(self, obj: Any) -> Any:
        for ty, fn in self._mapping:
            if isinstance(obj, ty):
                return fn(obj)
        return None
