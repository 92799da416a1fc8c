"""RDF terms as Python values, and graphs indexed for pattern matching.

IRIs and blank nodes are ``str`` subclasses (so filters compare and output them as
strings) told apart from string literals by their type; numeric literals are ``int`` or
``float``; every other literal is its lexical form as ``str``.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

import pyoxigraph as ox

__all__ = ["BNode", "Graph", "Iri", "Term", "index", "term_of"]


class Iri(str):
    """An IRI, in full."""

    __slots__ = ()


class BNode(str):
    """A blank node label (scoped to its named graph, as in SPAseq)."""

    __slots__ = ()


Term = Iri | BNode | int | float | str
# predicate → (subject, object) pairs: vertically partitioned, as SPAseq's GPM
# evaluator keeps them, so a triple pattern with a constant predicate scans one list.
Graph = dict[str, list[tuple[Term, Term]]]

_XSD = "http://www.w3.org/2001/XMLSchema#"
_INTEGERS = {
    _XSD + name
    for name in (
        "integer",
        "int",
        "long",
        "short",
        "byte",
        "nonNegativeInteger",
        "positiveInteger",
        "negativeInteger",
        "nonPositiveInteger",
        "unsignedInt",
        "unsignedLong",
        "unsignedShort",
        "unsignedByte",
    )
}
_FLOATS = {_XSD + "double", _XSD + "float"}
_DECIMAL = _XSD + "decimal"


def term_of(node: ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple | ox.DefaultGraph) -> Term:
    """The Python value of a parsed RDF term (numbers as numbers when well formed)."""
    if isinstance(node, ox.NamedNode):
        return Iri(node.value)
    if isinstance(node, ox.BlankNode):
        return BNode("_:" + node.value)
    if isinstance(node, ox.Literal):
        datatype = node.datatype.value
        text = node.value
        try:
            if datatype in _INTEGERS:
                return int(text)
            if datatype in _FLOATS:
                return float(text)
            if datatype == _DECIMAL:
                value = Decimal(text)
                return int(value) if value == value.to_integral_value() else float(value)
        except ValueError:
            return text
        return text
    raise TypeError(f"not a supported RDF term: {node!r}")


def index(triples: Iterable[tuple[Term, Term, Term]]) -> Graph:
    """A graph indexed by predicate; a triple given twice counts once (a graph is a set)."""
    graph: Graph = {}
    for s, p, o in triples:
        pairs = graph.setdefault(str(p), [])
        if (s, o) not in pairs:
            pairs.append((s, o))
    return graph
