"""Layer 0 of the house: Kafka's replication protocol as sans-IO state machines.

Each actor (broker, replica, fetcher, controller, coordinator, producer, consumer, admin) is
a plain object fed events — messages, timer ticks — that returns the messages to send and
the trace events to write; no Trio, no sockets, no clock of its own. It imports nothing of
the product above it (``tests/test_layers.py``); the runtime in ``emulator`` drives it.
"""
