"""One way to start (or join) Ray for every runner: sweeps (``tune.py``) and RL runs (``rl.py``).

* inside a Ray worker (an RL run that is a trial of a sweep) the existing connection is used;
* with ``RAY_ADDRESS`` set, the cluster it names is joined;
* otherwise a local Ray sized to this machine starts, with a small object store, no dashboard and
  a short temp dir (AF_UNIX socket paths are limited to 107 bytes).

The environment settings are made before ``import ray``, which reads some of them at import time
(STACK.md §2.2). Workers run at niceness 0: at Ray's default of 15 they starve beside the driver on a
2-core machine. On machines without a network, start Ray inside a loopback-only namespace
(``unshare -n``): its dashboard head probes cloud metadata addresses otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.tracking import configure_environment

RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_DEDUP_LOGS": "0", "RAY_CHDIR_TO_TRIAL_DIR": "0",
           "RAY_AIR_NEW_OUTPUT": "0", "RAY_worker_niceness": "0"}
OBJECT_STORE_BYTES = 256 * 1024**2


@contextmanager
def ray_session(num_cpus: int | None = None, log_to_driver: bool = True) -> Iterator[None]:
    """Ray is up inside the block; it is shut down afterwards only if this block started it."""
    configure_environment()  # W&B mode chosen before Ray starts, so workers inherit it
    for key, value in RAY_ENV.items():
        os.environ.setdefault(key, value)
    import ray

    if ray.is_initialized():
        yield
        return
    address = os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, include_dashboard=False, log_to_driver=log_to_driver)
    else:
        temp = Path(os.environ.get("RAY_TMPDIR", "/tmp/rh"))
        ray.init(num_cpus=num_cpus or os.cpu_count(), include_dashboard=False, object_store_memory=OBJECT_STORE_BYTES,
                 _temp_dir=str(temp), log_to_driver=log_to_driver)
    try:
        yield
    finally:
        ray.shutdown()
