"""OpenTunerAgent: OpenTuner (an ensemble of search techniques under a bandit meta-technique) as an Agent.

It drives OpenTuner through its Python API (``opentuner.api.TuningRunManager``; no command line, no
subprocess): ``act`` asks for the next desired result, ``observe`` reports its measured cost. Three things
OpenTuner does by default are changed here, so that it behaves like every other Wield agent:

- its results database is in memory (``sqlite://``), or a file the caller names inside a run record; it
  never creates ``opentuner.db/`` (nor its ``opentuner.log``) in the current directory;
- it draws from Python's global ``random`` and numpy's global generator: this agent seeds its own copies of
  both and swaps them in only while OpenTuner runs, so it is reproducible from its seed and neither
  disturbs nor is disturbed by other users of the global generators;
- it minimises a "time": the agent reports ``-reward`` (Wield rewards are higher-is-better), so rewards
  should be <= 0 (costs) for OpenTuner's ratio-based comparisons to keep their meaning.

Install with ``pip install 'wield[opentuner]'``.
"""

from __future__ import annotations

import contextlib
import random
import warnings
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from wield.agents.search import ConfigurationSearchAgent
from wield.errors import ConfigError
from wield.schemas.search_space import IntegerParameter, SearchSpace
from wield.seeding import derive_seed

#: How many generations OpenTuner may answer with only already-measured configurations before giving up.
MAX_EMPTY_GENERATIONS = 1000


def _import_opentuner():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SQLAlchemy 2 deprecation notices from OpenTuner's models
            import opentuner
            from opentuner import tuningrunmain
            from opentuner.api import TuningRunManager
            from opentuner.measurement.interface import DefaultMeasurementInterface
            from opentuner.resultsdb.models import Result
            from opentuner.search import manipulator
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ConfigError("agent", "opentuner",
                          reason=f"OpenTuner is not installed ({exc}); pip install 'wield[opentuner]'") from exc
    # OpenTuner's logging set-up adds a FileHandler writing opentuner.log into the current directory and an
    # INFO console handler on the root logger; Wield runs write only into their run record.
    tuningrunmain.init_logging = lambda: None
    return opentuner, TuningRunManager, DefaultMeasurementInterface, Result, manipulator


class OpenTunerAgent(ConfigurationSearchAgent):
    """OpenTuner searching a ``SearchSpace``; seeded, with its results database in memory by default.

    ``database``: ``None`` for an in-memory database, or a file path (put it inside the run record).
    ``techniques``: OpenTuner technique names (default: its AUC bandit over its standard ensemble).
    """

    def __init__(self, search_space: SearchSpace, seed: int = 0, database: str | Path | None = None,
                 techniques: Sequence[str] | None = None) -> None:
        super().__init__(search_space, seed)
        opentuner, manager_class, interface_class, self._result_class, manipulator = _import_opentuner()
        self._python_state = random.Random(derive_seed(seed, "opentuner", "python")).getstate()
        self._numpy_state = np.random.RandomState(derive_seed(seed, "opentuner", "numpy") % 2**32).get_state()
        args = opentuner.default_argparser().parse_args([])
        args.database = "sqlite://" if database is None else "sqlite:///" + str(Path(database).resolve())
        args.label = "wield"
        if techniques is not None:
            args.technique = list(techniques)
        configuration = manipulator.ConfigurationManipulator()
        for p in search_space.parameters:
            if "/" in p.name:  # OpenTuner reserves "/" for its nested parameters
                raise ConfigError("search space", p.name, reason="OpenTuner parameter names cannot contain '/'")
            if isinstance(p, IntegerParameter):
                configuration.add_parameter(manipulator.IntegerParameter(p.name, int(p.low), int(p.high)))
            else:
                configuration.add_parameter(manipulator.EnumParameter(p.name, list(p.options)))
        with self._opentuner_running():
            interface = interface_class(args=args, manipulator=configuration, project_name="wield",
                                        program_name="wield", program_version="0")
            try:
                self._manager = manager_class(interface, args)
            except SystemExit as exc:  # OpenTuner exits on an unknown technique name
                raise ConfigError("techniques", list(techniques or []),
                                  reason="OpenTuner does not know one of these techniques") from exc
        self._pending: dict[tuple, Any] = {}
        self._closed = False

    @contextlib.contextmanager
    def _opentuner_running(self) -> Iterator[None]:
        """Swap this agent's generators into the global ``random`` and numpy state while OpenTuner runs."""
        saved_python, saved_numpy = random.getstate(), np.random.get_state()
        random.setstate(self._python_state)
        np.random.set_state(self._numpy_state)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # SQLAlchemy session warnings inside OpenTuner's drivers
                yield
        finally:
            self._python_state, self._numpy_state = random.getstate(), np.random.get_state()
            random.setstate(saved_python)
            np.random.set_state(saved_numpy)

    @staticmethod
    def _key(configuration: dict[str, Any]) -> tuple:
        return tuple(sorted(configuration.items()))

    def propose(self) -> dict[str, Any]:
        if self._closed:
            raise ConfigError("agent", "opentuner", reason="the tuning run is finished (close() was called)")
        with self._opentuner_running():
            for _ in range(MAX_EMPTY_GENERATIONS):
                desired = self._manager.get_next_desired_result()
                if desired is not None:
                    break
            else:
                raise ConfigError("search space", self.search_space.log10_size(), reason=(
                    "OpenTuner proposed no new configuration (is the space smaller than the budget?)"))
        configuration = {name: desired.configuration.data[name] for name in self.search_space.names}
        self._pending[self._key(self.search_space.validate(configuration))] = desired
        return configuration

    def record(self, configuration: dict[str, Any], reward: float) -> None:
        """Report the cost ``-reward`` of a configuration OpenTuner proposed (others it does not learn from)."""
        desired = self._pending.pop(self._key(configuration), None)
        if desired is None:
            return
        with self._opentuner_running():
            self._manager.report_result(desired, self._result_class(time=-float(reward)))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._opentuner_running():
            if self._manager.get_best_result() is not None:
                self._manager.finish()
            else:
                self._manager.session.close()
