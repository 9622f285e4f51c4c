"""Whatever a file holds, loading it gives a graph or one TopologyError line, never another exception."""

import copy
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topologies import TopologyError, load_topology
from topologies.fileformat import document_to_graph, graph_to_document

BASE = graph_to_document(load_topology("a100-4gpu"))

junk = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=True) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3) | st.integers(0, 2), inner, max_size=3),
    max_leaves=6,
)


def paths(doc, prefix=()):
    """Every (container path, key) in the document, so a mutation can hit any field."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else []
    for key, value in items:
        yield prefix + (key,)
        yield from paths(value, prefix + (key,))


ALL_PATHS = list(paths(BASE))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(ALL_PATHS), junk), min_size=1, max_size=3))
def test_mutated_documents_fail_cleanly(mutations):
    doc = copy.deepcopy(BASE)
    for path, value in mutations:
        target = doc
        try:
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    try:
        document_to_graph(doc)
    except TopologyError as error:
        assert "\n" not in str(error) and str(error)


@settings(max_examples=60, deadline=None)
@given(junk)
def test_any_json_value_as_a_whole_file(tmp_path_factory, value):
    path = tmp_path_factory.mktemp("fuzz") / "t.json"
    path.write_text(json.dumps(value))
    try:
        load_topology(str(path))
    except TopologyError:
        pass
