import logging

from proj.core.layers.utils.common import warm
from proj.core.managers.mixin import StepMixin
from proj.core.utils.common import slow_rank

logger = logging.getLogger(__name__)


class Scheduler(StepMixin):
    """The scheduler; see the mixin for the overlap step."""

    def __init__(self, parser):
        self.parser = parser

    def recv(self):
        logger.warning_once(f"got default untyped message {self}")

    def step(self):
        logger.info("step finished for batch")
        warm()

    def overflow(self):
        # logger.error("queue overflow, dropping request")
        pass

    def flags(self):
        self.parser.error("bad flag value given")

    def event_loop_normal(self):
        while True:
            self.recv()
            self.step()
            slow_rank(0)
