"""Writing outputs safely: atomic files and directories, ownership tags, debris sweep.

The lowest layer with errors, metrics, threads and provenance: it imports nothing
else from exlm_chem (see ARCHITECTURE.md).
"""
