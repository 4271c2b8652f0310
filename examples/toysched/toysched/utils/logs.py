"""Logging setup shared by the scheduler processes.

Modules log through their own ``logger = logging.getLogger(__name__)``.
"""

import logging

logger = logging.getLogger(__name__)


def configure_logger(tp_rank: int, pp_rank: int, level: int = logging.INFO) -> None:
    prefix = f" TP{tp_rank} PP{pp_rank}"
    logging.basicConfig(
        level=level,
        format=f"[%(asctime)s{prefix}] %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
        force=True,
    )
    logger.info("Logging configured for TP%d PP%d at level %s", tp_rank, pp_rank, level)
