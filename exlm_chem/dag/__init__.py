"""States-alignment DP over the DAG of expanded states (torch reference, Triton, Viterbi).

Importing this package imports torch but never triton: the Triton kernels are loaded by
:func:`dag_logprob` only when they are selected.
"""

from exlm_chem.dag.dispatch import dag_logprob
from exlm_chem.dag.reference import dag_logprob_autograd, dag_logprob_reference
from exlm_chem.dag.viterbi import BestAlignment, dag_best_alignment

__all__ = [
    "BestAlignment",
    "dag_best_alignment",
    "dag_logprob",
    "dag_logprob_autograd",
    "dag_logprob_reference",
]
