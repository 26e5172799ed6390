"""Training: objectives, pre-training, fine-tuning (settings, network, epoch loop), probe.

Imports data/, model/ and dag/; never the estimators, benchmark or CLI above it
(see ARCHITECTURE.md).
"""
