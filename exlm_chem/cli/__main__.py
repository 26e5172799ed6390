"""``python -m exlm_chem.cli`` (used by torchrun, which needs a module or a script)."""

import sys

from exlm_chem.cli import console_main

sys.exit(console_main())
