"""The screening commands keep Dask's per-module loggers quiet unless asked (-v)."""

from __future__ import annotations

import logging

import pytest

from exlm_chem.screening.feed import quiet_dask


@pytest.fixture
def dask_loggers():
    import distributed  # noqa: F401  (configures its loggers)

    names = [n for n in logging.root.manager.loggerDict
             if n == "distributed" or n.startswith("distributed.")]
    levels = {n: logging.getLogger(n).level for n in names}
    root = logging.getLogger().level
    yield names
    for n, level in levels.items():
        logging.getLogger(n).setLevel(level)
    logging.getLogger().setLevel(root)


def test_every_dask_logger_goes_to_warning(dask_loggers):
    logging.getLogger().setLevel(logging.INFO)
    logging.getLogger("distributed.scheduler").setLevel(logging.INFO)  # as Dask's config does
    quiet_dask()
    assert "distributed.scheduler" in logging.root.manager.loggerDict
    assert not logging.getLogger("distributed.scheduler").isEnabledFor(logging.INFO)
    assert all(logging.getLogger(n).level == logging.WARNING for n in dask_loggers)


def test_a_debug_root_keeps_their_chatter(dask_loggers):
    logging.getLogger().setLevel(logging.DEBUG)
    logging.getLogger("distributed.scheduler").setLevel(logging.INFO)
    quiet_dask()
    assert logging.getLogger("distributed.scheduler").isEnabledFor(logging.INFO)
