"""The facts harness/ and analysis/ share: the parameter layout (layout), the training recipe
(recipe), the small statistics (stats), the repository's paths and atomic writes (files), the
JSON schemas (schema), the commit and driver a results file records (provenance).

spec imports nothing from harness/ or analysis/; both import it.
"""
