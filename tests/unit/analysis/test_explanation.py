"""The case-study explanation: numbers against the model and against brute force."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import torch

from exlm_chem.analysis.explanation import explain, explanation_from_dict, parse_masked_smiles
from exlm_chem.analysis.explanation_paths import (
    fixed_length_viterbi,
    transition_viterbi,
    visit_probabilities,
)
from exlm_chem.analysis.explanation_plot import plot_explanation
from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.model.checkpoint import load_checkpoint

SMILES = "CC(=O)[MASK]c1ccccc1[MASK]"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def explanation(tiny_checkpoint):
    return explain(SMILES, model=tiny_checkpoint, top_k=3)


def _manual_expansion(ids: list[int], k: int, expand: set[int]):
    """Expanded ids and 2D positions written out by hand (not via collate)."""
    out, pos_o, pos_c, states = [], [], [], []
    for i, token in enumerate(ids):
        copies = k if token in expand else 1
        for c in range(copies):
            if token in expand:
                states.append(len(out))
            out.append(token)
            pos_o.append(i)
            pos_c.append(c + 1 if token in expand else 0)
    return out, pos_o, pos_c, states


def _all_paths(n: int):
    """Every state sequence 0 < ... < n-1 (each interior subset)."""
    inner = range(1, n - 1)
    for size in range(n - 1):
        for combo in itertools.combinations(inner, size):
            yield [0, *combo, n - 1]


def test_parse_masked_smiles_puts_the_mask_id_at_the_placeholders():
    tok = SmilesTokenizer()
    parsed = parse_masked_smiles("C[MASK]O[MASK]", tok)
    assert parsed.ids.tolist() == [0, tok.token_to_id["C"], 4, tok.token_to_id["O"], 4, 2]
    assert parsed.pieces == ["C", "O", ""]
    assert parsed.tokens == ["[CLS]", "C", "[MASK]", "O", "[MASK]", "[SEP]"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("CC(=O)c1ccccc1", r"holds no \[MASK\]"),
        ("C[MASK]C§", "'§'.*not in the model's vocabulary"),
        ("C[MASK][PAD]", r"'\[PAD\]'.*not in the model's vocabulary"),
        ("[MASK][MASK]", "no SMILES tokens besides"),
    ],
)
def test_bad_input_is_a_clear_error(text, message):
    with pytest.raises(ValueError, match=message):
        parse_masked_smiles(text, SmilesTokenizer())


def test_hand_made_dag_visits_and_paths():
    e = np.array([[0.0, 0.6, 0.1, 0.3],
                  [0.0, 0.0, 0.7, 0.3],
                  [0.0, 0.0, 0.0, 1.0],
                  [0.0, 0.0, 0.0, 0.0]])
    with np.errstate(divide="ignore"):
        log_e = np.log(e)
    visit, log_z = visit_probabilities(log_e)
    np.testing.assert_allclose(visit, [1.0, 0.6, 0.1 + 0.6 * 0.7, 1.0], atol=1e-12)
    assert abs(log_z) < 1e-12
    path, score = transition_viterbi(log_e, np.zeros(4))
    assert path == [0, 1, 2, 3]
    assert score == pytest.approx(np.log(0.6 * 0.7))
    # penalising state 1 by a factor 0.5 makes the direct edge (0.3 > 0.21) best
    path, score = transition_viterbi(log_e, np.log([1.0, 0.5, 1.0, 1.0]))
    assert path == [0, 3]
    assert score == pytest.approx(np.log(0.3))
    path, _ = fixed_length_viterbi(log_e, np.zeros(4), 3)
    assert path == [0, 1, 3]  # 0.18 beats 0 -> 2 -> 3 (0.1)
    with pytest.raises(ValueError, match=r"visits 2\.\.4 states"):
        fixed_length_viterbi(log_e, np.zeros(4), 5)


def test_numbers_match_a_direct_forward_pass(explanation, tiny_checkpoint):
    model, config, _ = load_checkpoint(tiny_checkpoint)
    tok = SmilesTokenizer.from_file(tiny_checkpoint / "vocab.txt")
    ids = [0, *tok.convert_tokens_to_ids(list("CC(=O)")), 4,
           *tok.convert_tokens_to_ids(list("c1ccccc1")), 4, 2]
    expanded, pos_o, pos_c, states = _manual_expansion(ids, config.k_states, {0, 2, 4})
    batch = [torch.tensor([a]) for a in (expanded, pos_o, pos_c, states)]  # each [1, X]
    with torch.no_grad():
        hidden = model(*batch[:3], torch.ones(1, len(expanded), dtype=torch.bool))
        probs = torch.softmax(model.lm_head(hidden[0, states]), -1).double().numpy()
        log_e = model.transition_head(hidden, batch[3], torch.tensor([len(states)]))[0]
    e = torch.exp(log_e).double().numpy()  # exp(-inf) = 0 on non-edges

    s = len(states)
    assert s == config.k_states * 4  # BOS, 2 masks, EOS
    np.testing.assert_allclose(explanation.transitions, e, atol=1e-6)
    for i in range(s):
        order = np.argsort(-probs[i])[:3]
        assert explanation.top_tokens[i] == tok.convert_ids_to_tokens(order.tolist())
        np.testing.assert_allclose(explanation.top_probs[i], probs[i, order], atol=1e-6)
    assert [st.expanded_position for st in explanation.states] == states
    kinds = [(st.kind, st.mask_index, st.copy) for st in explanation.states]
    assert kinds == [("BOS", None, 1), ("BOS", None, 2), ("MASK", 1, 1), ("MASK", 1, 2),
                     ("MASK", 2, 1), ("MASK", 2, 2), ("EOS", None, 1), ("EOS", None, 2)]

    # rows sum to 1 over the allowed successors; nothing below or on the diagonal
    sums = explanation.transitions.sum(axis=1)
    np.testing.assert_allclose(sums[:-1], 1.0, atol=1e-5)
    assert sums[-1] == 0.0
    assert not np.tril(explanation.transitions).any()


def test_visits_and_viterbi_agree_with_enumerating_every_path(explanation):
    e = explanation.transitions
    s = e.shape[0]
    node = explanation.top_probs[:, 0]  # each state's most probable token
    visit = np.zeros(s)
    total = 0.0
    best_score, best_path, best_fixed, fixed_score = -1.0, None, None, -1.0
    n_masks = len(explanation.fill_in)
    for path in _all_paths(s):
        weight = float(np.prod([e[u, v] for u, v in itertools.pairwise(path)]))
        total += weight
        visit[path] += weight
        score = weight * float(np.prod(node[path]))
        if score > best_score:
            best_score, best_path = score, path
        if len(path) == n_masks + 2 and score > fixed_score:
            fixed_score, best_fixed = score, path
    assert total == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_allclose(explanation.visit_probability, visit / total, atol=1e-6)
    assert explanation.visit_probability[0] == pytest.approx(1.0)
    assert explanation.visit_probability[-1] == pytest.approx(1.0)
    assert ((explanation.visit_probability >= 0) & (explanation.visit_probability <= 1)).all()
    assert explanation.viterbi_path == best_path
    assert explanation.viterbi_log_score == pytest.approx(np.log(best_score), abs=1e-6)
    assert explanation.one_per_mask_path == best_fixed


def test_fill_in_is_what_the_path_emits(explanation):
    expected: list[list[str]] = [[] for _ in explanation.fill_in]
    unattributed = []
    for s in explanation.viterbi_path[1:-1]:
        state = explanation.states[s]
        if state.kind == "MASK":
            expected[state.mask_index - 1].append(explanation.top_tokens[s][0])
        else:
            unattributed.append(explanation.top_tokens[s][0])
    assert explanation.fill_in == expected
    assert [u["token"] for u in explanation.unattributed] == unattributed
    assert all(len(f) <= explanation.k for f in explanation.fill_in)
    fixed = [explanation.top_tokens[s][0] for s in explanation.one_per_mask_path[1:-1]]
    assert explanation.one_per_mask_fill == fixed
    assert explanation.one_per_mask_smiles == f"CC(=O){fixed[0]}c1ccccc1{fixed[1]}"


def test_json_round_trip_and_figure(explanation, tmp_path):
    path = explanation.write_json(tmp_path / "out.json")
    data = json.loads(path.read_text())
    assert data["states"][2]["kind"] == "MASK" and data["states"][2]["mask_index"] == 1
    np.testing.assert_allclose(data["transitions"], explanation.transitions)
    back = explanation_from_dict(data)
    assert back.viterbi_path == explanation.viterbi_path
    np.testing.assert_allclose(back.top_probs, explanation.top_probs)

    png = plot_explanation(back, tmp_path / "fig.png")
    raw = png.read_bytes()
    assert raw[:8] == PNG_MAGIC and len(raw) > 10_000


def test_mlm_checkpoint_is_refused(tmp_path):
    from exlm_chem.model import ExLMConfig, ExLMModel, save_checkpoint

    tok = SmilesTokenizer()
    config = ExLMConfig.preset("tiny", len(tok), objective="mlm")
    save_checkpoint(tmp_path / "mlm", ExLMModel(config), config, tok.tokens)
    with pytest.raises(ValueError, match="'mlm' checkpoint"):
        explain(SMILES, model=tmp_path / "mlm")
