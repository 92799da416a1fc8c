"""The fleet's control plane: query registry, keyed topics, routing, and the Kafka plumbing workers share."""  # noqa: E501
