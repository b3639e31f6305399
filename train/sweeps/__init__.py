"""Sweeps on Ray Tune: the sweep file (``config``), the trials on Ray Tune (``tune``), their tables (``report``).

The command line is ``uno-tune`` (:mod:`train.cli.tune`). Only ``tune`` uses Ray, and only inside its functions.
"""
