"""Play and watch: the table people sit at.

* :mod:`train.table.session`: one game at a table, where each seat is a Policy or a person;
* :mod:`train.table.records`: game records (JSON): save, load, and re-simulate them move by move;
* :mod:`train.table.moves`: reading a person's move ("r7", "red 7", "wild blue", "draw", a menu number);
* :mod:`train.table.console`: cards, tables and beliefs drawn in the terminal with rich;
* :mod:`train.table.terminal`: the terminal game (a match with a running score and a rematch prompt);
* :mod:`train.table.replay`: stepping through a saved game forward and back;
* :mod:`train.table.watch`: two players playing each other at a chosen pace;
* :mod:`train.table.web`: the browser table (``uno-play --web``), a small local HTTP server.

``uno-play`` (:mod:`train.cli.play`) is the command line over these modules.
"""
