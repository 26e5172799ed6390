"""Files written safely (atomic files and directories, owner checks, debris) and checksummed.

The lowest layer with errors, metrics, threads and provenance: it imports nothing
else from exlm_chem (see ARCHITECTURE.md).
"""
