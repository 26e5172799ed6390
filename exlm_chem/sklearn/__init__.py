"""The scikit-learn estimators, their input checks, persistence and prediction helpers.

Imports train/, uncertainty/, model/, data/; the benchmark, screening and CLI build on
it (see ARCHITECTURE.md).
"""
