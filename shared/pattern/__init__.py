"""The pattern form: the one language-neutral input of the engine.

Every query language is a front-end that turns its text into a ``Pattern`` (CEQL's and
MATCH_RECOGNIZE's parsers do; the RDF languages will); the compiler (CEA construction,
the predicate compilers, ``cerfleet.plan``) consumes nothing else, and no module of
this form imports a front-end. Its three modules are its three layers:
``predicates`` (expressions, predicates, filter atoms, spans), ``formulas`` (CEL) and
``options`` (the query clauses and ``Pattern``); import them from here.

The contract:

* **Three layers**, as in the CORE paper (Fig. 2, §2): value expressions over one
  event (``Expr``), unary predicates on one event (``Pred``), and CEL formulas
  (``Formula``) that combine event types, variables, sequencing, disjunction,
  iteration and filters. ``Pattern`` is a formula with its options: projection
  (``select``), selection strategy, input streams, partitioning, window,
  consumption, limit and the declared event schemas.
* **Semantics** are the CORE paper's: a formula denotes a set of complex events
  (sets of positions) with valuations binding each variable to positions; a
  ``FilterAtom`` holds when every event bound to its variable satisfies its
  predicate; ``Seq`` is non-contiguous sequencing, ``Plus`` non-contiguous
  iteration; ``Contiguous``/``ContiguousPlus`` leave no event of the (partition's)
  stream between their parts, ``Absent`` no event of a given kind, ``And`` joins two
  matches ending at the same event, ``NotEvent`` is one
  event not of a kind, ``AnyEvent`` one event of any type. Options are applied after
  the formula, in the order partitioning → window → strategy → consumption → limit.
* **Nodes are immutable values**: frozen dataclasses, hashable, equal when they say
  the same thing. Each carries the source ``Span`` it came from (any front-end's own
  line and column) so that errors found after parsing point at the text; spans never
  take part in equality.
* **Extension**: an operator is a new node kind in one of the three unions (``Expr``,
  ``Pred``, ``Formula``), never a flag on an existing kind: contiguity, absence and
  conjunction are new ``Formula`` kinds; predicates comparing several events, lagged
  values (``PREV``) and graph-pattern matches are new ``Pred``/``Expr`` kinds. A
  consumer that meets a kind it does not handle raises ``TypeError`` naming it, so a
  front-end can never silently produce something the compiler ignores.
* **Names**: event types and variables are plain strings; a variable named like an
  event type is bound to the events of that type (CEL's ``R`` is ``R AS R``).
  Attribute names are event field names, resolved per event at evaluation time.
"""

from cerfleet.pattern.formulas import (
    Absent,
    And,
    AnyEvent,
    As,
    Contiguous,
    ContiguousPlus,
    EventType,
    Filter,
    Formula,
    NotEvent,
    Or,
    Plus,
    Seq,
)
from cerfleet.pattern.options import (
    TIME_UNITS_MS,
    AttrType,
    Consume,
    EventDecl,
    Pattern,
    Quarantine,
    QuarantineKind,
    Strategy,
    StreamDecl,
    Window,
    WindowKind,
)
from cerfleet.pattern.predicates import (
    Arith,
    Attr,
    BoolLit,
    Compare,
    Const,
    Correlation,
    Expr,
    FilterAnd,
    FilterAtom,
    FilterExpr,
    FilterOr,
    GraphIri,
    GraphLiteral,
    GraphMatch,
    GraphTerm,
    GraphVar,
    InList,
    InRange,
    InStream,
    Like,
    Neg,
    PAnd,
    PNot,
    POr,
    Pred,
    Prev,
    RunningAttr,
    Scalar,
    Span,
    TriplePattern,
    VarAttr,
)

__all__ = [
    "TIME_UNITS_MS",
    "Absent",
    "And",
    "AnyEvent",
    "Arith",
    "As",
    "Attr",
    "AttrType",
    "BoolLit",
    "Compare",
    "Const",
    "Consume",
    "Contiguous",
    "ContiguousPlus",
    "Correlation",
    "EventDecl",
    "EventType",
    "Expr",
    "Filter",
    "FilterAnd",
    "FilterAtom",
    "FilterExpr",
    "FilterOr",
    "Formula",
    "GraphIri",
    "GraphLiteral",
    "GraphMatch",
    "GraphTerm",
    "GraphVar",
    "InList",
    "InRange",
    "InStream",
    "Like",
    "Neg",
    "NotEvent",
    "Or",
    "PAnd",
    "PNot",
    "POr",
    "Pattern",
    "Plus",
    "Pred",
    "Prev",
    "Quarantine",
    "QuarantineKind",
    "RunningAttr",
    "Scalar",
    "Seq",
    "Span",
    "Strategy",
    "StreamDecl",
    "TriplePattern",
    "VarAttr",
    "Window",
    "WindowKind",
]
