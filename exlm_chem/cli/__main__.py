"""``python -m exlm_chem.cli`` (used by torchrun, which needs a module or a script)."""

import sys

from exlm_chem.cli import main

sys.exit(main())
