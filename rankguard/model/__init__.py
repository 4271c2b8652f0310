"""The whole-program model: modules, classes, functions, resolved calls and the call graph."""

from rankguard.model.load import load_path, load_program
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord, Target

__all__ = ["FunctionRecord", "Program", "Target", "load_path", "load_program"]
