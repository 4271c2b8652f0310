import logging

logger = logging.getLogger(__name__)


def warm():
    logger.info("layer cache ready")
