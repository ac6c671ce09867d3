"""Command-line tools: `python -m gt.scripts.<name>` (trace, top, visualize, coverage)."""
