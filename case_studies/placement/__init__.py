"""Device placement case study: place a training step's operations on devices to minimise step time.

Graphs come from ``workloads.graphs`` (real PyTorch models traced with torch.fx); ``profiler`` measures
operation costs on this machine; ``topology`` describes devices and links; ``simulator`` evaluates a
placement; ``real_evaluator`` runs it on real devices; ``wield_placer`` and ``baselines`` search placements.
"""
