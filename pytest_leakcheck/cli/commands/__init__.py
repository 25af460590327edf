"""One module per `leakcheck` command: ``add_parser(sub)`` declares its options and imports
nothing heavy; ``run(args) -> int`` turns the options into plain values and does the work,
importing what it needs inside.  cli/main.py lists them in its ``COMMANDS`` table.
"""
