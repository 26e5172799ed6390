"""The ADMET panel: many endpoints scored in one call, from models shipped in the repository."""
