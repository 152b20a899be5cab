"""The facts harness/ and analysis/ share: the parameter layout (layout), the small statistics
(stats), the repository's paths and atomic writes (files), the JSON schemas (schema).

spec imports nothing from harness/ or analysis/; both import it.
"""
