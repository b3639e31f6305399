"""``python -m train``: the same as ``uno-train``."""

import sys

from train.cli.train import main

sys.exit(main())
