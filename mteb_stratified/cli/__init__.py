"""Command-line front end (``mteb-stratified``): the top layer; parse, call, print.

:mod:`.main` builds the parser from one module per subcommand (each ``add_parser`` + ``run``);
:mod:`._args` holds the shared argument types and options.
"""
