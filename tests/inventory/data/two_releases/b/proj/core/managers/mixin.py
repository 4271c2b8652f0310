import logging

logger = logging.getLogger(__name__)


class StepMixin:
    def overlap_step(self):
        logger.info("step finished for batch")

    def shutdown(self):
        logger.info("shutdown requested by peer")
