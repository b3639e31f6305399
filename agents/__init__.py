from agents import search  # noqa: F401  (importing it registers the "search" policy name)
