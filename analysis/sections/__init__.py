"""One module per part of the reports. Each returns numbers and small records (names, flags,
lists), never sentences: the templates word them (templates/*.j2, through analysis/fmt.py)."""
