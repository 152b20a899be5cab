"""CPU: the mutation table (tests/mutations/mutations.toml, issue 42) holds together: docs/MUTATIONS.md's
table is its rendering, every entry's text occurs exactly once in its file (else the mutation would
change nothing, or something else), and every test it expects to fail exists. Running the mutations
themselves takes minutes: tests/mutations/run_mutations.py."""
from __future__ import annotations

import importlib.util
import re
import sys

from spec.files import ROOT

_spec = importlib.util.spec_from_file_location("run_mutations", ROOT / "tests" / "mutations" / "run_mutations.py")
run_mutations = importlib.util.module_from_spec(_spec)
sys.modules["run_mutations"] = run_mutations   # its dataclass looks its module up
_spec.loader.exec_module(run_mutations)


def test_the_docs_table_is_the_tables_rendering():
    doc = (ROOT / "docs" / "MUTATIONS.md").read_text()
    block = re.search(r"<!-- mutations:start -->\n(.*?)<!-- mutations:end -->", doc, re.S)
    assert block, "docs/MUTATIONS.md has no mutations block"
    assert block.group(1) == run_mutations.table(run_mutations.load()), \
        "docs/MUTATIONS.md's table is stale: python tests/mutations/run_mutations.py --table"


def test_every_mutation_changes_one_place_and_names_tests_that_exist():
    mutations = run_mutations.load()
    assert len(mutations) >= 14
    for m in mutations:
        assert (ROOT / m.file).read_text().count(m.old) == 1, (m.name, m.file)
        assert m.new != m.old, m.name
        for node in m.expect:
            path, _, test = node.partition("::")
            name, _, param = test.partition("[")
            text = (ROOT / path).read_text()
            assert f"def {name}(" in text, (m.name, node)
            assert param.rstrip("]") in text, (m.name, node)   # the parameter's value is written in the file
