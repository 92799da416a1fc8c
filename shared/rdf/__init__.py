"""RDF graph streams: TriG input, the per-instant events the automaton reads, and
graph-pattern matching on one event's graph (the ``pattern.GraphMatch`` predicate)."""
