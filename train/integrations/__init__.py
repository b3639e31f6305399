"""The env plugged into other people's RL code: each module is one runnable learner, readable top to bottom.

Every module here is a script (``python -m train.integrations.NAME --help``) and a function the test suite calls
on a tiny budget. None is imported by the rest of the project: they depend on the env and the agents, never the
other way round.
"""
