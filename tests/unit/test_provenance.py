"""Which commit a record names."""

from __future__ import annotations

import subprocess

from exlm_chem import provenance


def test_the_named_commit_wins_over_the_checkout(monkeypatch):
    # a copy of a checkout (a GPU machine's) may carry a .git of its own: the commit it was
    # copied from is the one the caller names
    monkeypatch.setenv("EXLM_GIT_COMMIT", "abc1234")
    assert provenance.git_commit() == "abc1234"


def test_without_a_name_the_checkout_or_the_version(monkeypatch, tmp_path):
    monkeypatch.delenv("EXLM_GIT_COMMIT", raising=False)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=provenance.REPO,
                          capture_output=True, text=True)
    found = provenance.git_commit()
    if head.returncode == 0:  # a checkout: its HEAD, maybe marked dirty
        assert found.split("+")[0] == head.stdout.strip()
    monkeypatch.setattr(provenance, "REPO", tmp_path)  # not a checkout
    from exlm_chem import __version__

    assert provenance.git_commit() == f"exlm_chem {__version__}"
