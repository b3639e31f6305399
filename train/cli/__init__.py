"""The command-line programs: ``uno-train`` (``train``), ``uno-evaluate`` (``evaluate``), ``uno-play`` (``play``),
``uno-tune`` (``tune``) and ``python -m train.cli.ship`` (``ship``)."""
