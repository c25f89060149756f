"""How many threads torch computes with while Wield trains.

Wield's networks are small: one torch thread trains them fastest and leaves the other cores to the system
under control and to parallel trials (a script that trained with torch's default, one thread per core,
took 10 minutes where one thread took 55 s). ``apply_torch_threads()`` runs where training starts
(``train_online``), in every trial worker process and in the ``wield`` command, so Python users get the
same setting as the command. It sets torch to

- ``WIELD_TORCH_THREADS`` threads when that variable is set (``0``: leave torch's setting alone);
- else one thread, unless the user chose a count: ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS`` set, or
  ``torch.set_num_threads(n)`` called before training (seen as a count other than torch's default, the
  size of its inter-op pool); that choice stands. To keep torch's default count, set
  ``WIELD_TORCH_THREADS=0``.

Under the reproducible arithmetic (``wield.numerics``, the command's default) torch always trains with one
thread, whatever is asked (the log says so when a count was): MKL's matrix products, even on its strict
compatible code path, split some shapes differently with two threads than with one, e.g. a 64 x 128 by
128 x 133 product, which the shortlist design's slot network computes in its backward pass, so a second thread
changed the trained weights (``tests/test_numerics.py`` trains with both). ``WIELD_NUMERICS=native`` keeps the
counts above.
"""

from __future__ import annotations

import os

from wield.errors import ConfigError
from wield.logs import get_logger

log = get_logger(__name__)

VARIABLE = "WIELD_TORCH_THREADS"
USER_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def wanted_threads() -> int | None:
    """``WIELD_TORCH_THREADS`` as a count (0: leave torch alone), None when it is not set."""
    text = os.environ.get(VARIABLE, "").strip()
    if not text:
        return None
    try:
        count = int(text)
    except ValueError:
        count = -1
    if count < 0:
        raise ConfigError(VARIABLE, text, reason="must be a whole number >= 0 (0: leave torch's setting)")
    return count


def apply_torch_threads() -> int:
    """Set torch's thread count by the rules above; the count torch computes with afterwards."""
    import torch

    from wield.numerics import requested_mode

    count = wanted_threads()
    if requested_mode(default="native") == "reproducible":
        asked = [f"{name}={os.environ[name]}" for name in (VARIABLE, *USER_VARIABLES)
                 if os.environ.get(name, "").strip() not in ("", "1")]
        if asked:
            log.info("reproducible arithmetic: torch trains with one thread, not as %s asks (a second thread "
                     "changes MKL's sums; WIELD_NUMERICS=native keeps the count)", ", ".join(asked))
        count = 1
    elif count is None:
        user_chose = (any(os.environ.get(name, "").strip() for name in USER_VARIABLES)
                      or torch.get_num_threads() != torch.get_num_interop_threads())
        count = 0 if user_chose else 1
    if count and torch.get_num_threads() != count:
        torch.set_num_threads(count)
    return torch.get_num_threads()
