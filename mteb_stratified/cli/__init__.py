"""Command-line front end (``mteb-stratified``)."""
