"""Hyperparameter search for ``wield tune CASE`` (issue 46): an Optuna study over a learner's ``[agent]`` table.

``wield.tuning.space`` reads and checks the search space (``[tune.space]`` of a TOML/YAML/JSON file, or the
learner's built-in default); ``wield.tuning.study`` runs the study, resumably, in a tune directory: every
Optuna trial runs ``wield run CASE`` once per seed in process, and its objective is the learning verdict's
held-out score of the greedy policy, averaged over the seeds. Optuna (``pip install 'wield[tune]'``) is
imported only when a study runs, so importing this package costs nothing.
"""
