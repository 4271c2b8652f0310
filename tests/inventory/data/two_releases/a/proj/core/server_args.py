import logging

logger = logging.getLogger(__name__)


def check_args(tp_size):
    if tp_size < 0:
        raise ValueError("negative tensor parallel size")
