"""``python -m train``: the same as ``uno-train``."""

import sys

from train.cli import main

sys.exit(main())
