import logging

logger = logging.getLogger(__name__)


def slow_rank(group):
    logger.warning("slow rank detected in group %s", group)


def drain():
    """Waits until the pool drained completely."""
    return 0
