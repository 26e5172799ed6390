"""Where a benchmark figure came from (imported by the scripts in this folder).

``python benchmarks/NAME.py`` puts this folder on ``sys.path``; the functions live in
:mod:`exlm_chem.provenance`, shared with the benchmark runner.
"""

from exlm_chem.provenance import REPO, cpu_model, git_commit, load_average, machine

__all__ = ["REPO", "cpu_model", "git_commit", "load_average", "machine"]
