import numpy as np

from exlm_chem.data.collate import SpecialIds, mask_tokens
from exlm_chem.data.fragments import fragment_token_groups
from exlm_chem.data.tokenizer import SmilesTokenizer

TOK = SmilesTokenizer()


def test_brics_groups_partition_the_atom_tokens():
    # an ester between a benzoyl and an ethoxy group: BRICS cuts the C(=O)-O bond
    smiles = "CCOC(=O)c1ccccc1"
    tokens = TOK.tokenize(smiles)
    groups = fragment_token_groups(smiles, TOK)
    positions = sorted(int(p) for g in groups for p in g)
    atom_positions = [i + 1 for i, t in enumerate(tokens) if t not in "()=123456789"]
    assert positions == atom_positions
    assert len(groups) >= 2
    assert {tokens[p - 1] for p in groups[0]} <= {"C", "O"}


def test_unparsable_smiles_gives_no_groups():
    assert fragment_token_groups("C1CC", TOK) == []


def test_truncation_drops_positions_past_the_kept_tokens():
    smiles = "CCOC(=O)c1ccccc1"
    groups = fragment_token_groups(smiles, TOK, n_ids=6)  # BOS + 4 tokens + EOS
    assert all(p < 5 for g in groups for p in g)


def test_fragment_masking_masks_whole_fragments():
    smiles = "CCOC(=O)c1ccc(NC(=O)C)cc1"
    ids = np.asarray(TOK.encode(smiles))
    groups = fragment_token_groups(smiles, TOK, len(ids))
    special = SpecialIds(TOK.bos_id, TOK.pad_id, TOK.eos_id, TOK.mask_id)
    sample = mask_tokens(ids, 0.15, np.random.default_rng(0), special, groups)
    masked = set(sample.masked_positions.tolist())
    assert masked
    for g in groups:
        assert masked.issuperset(g.tolist()) or masked.isdisjoint(g.tolist())
