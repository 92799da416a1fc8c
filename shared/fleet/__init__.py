"""What the fleet's services share: the keyed-record format and headers, the query
registry, topics, settings, metrics and the service command-line scaffolding, plus the
client commands (``submit``, ``produce``, ``consume``, ``dev``) and a local broker.

The coordinator (``cerfleet.coordinator``) and the workers (``cerfleet.workers``) import
this package and never each other. The engine (the rest of ``cerfleet``) never imports
it: it is free of Kafka.
"""
