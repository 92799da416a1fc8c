"""Workers: evaluate the keyed topics' events with the engine, publish complex events,
checkpoint evaluator state so any worker can take a partition over."""
