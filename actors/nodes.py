"""Node names: which simulated process a trace's ``node`` field is, as a Kafka node id.

Brokers are ``broker-<id>``; the KRaft controller voters are ``controller-<id>``, their ids
from :data:`CONTROLLER_ID_BASE` up so that they never meet a broker's (Kafka's
``node.id`` is one id space for both roles). The names are all the module knows: nothing of
the protocol is imported, so a reader of traces (``isrlab show``) can name a node without
loading the actors.
"""

from __future__ import annotations

from typing import Final

#: controller node ids start here (never a broker id); node ``controller-<id>``
CONTROLLER_ID_BASE: Final = 3000
CONTROLLER_PREFIX: Final = "controller-"
BROKER_PREFIX: Final = "broker-"


def controller_node(node_id: int) -> str:
    return f"{CONTROLLER_PREFIX}{node_id}"


def controller_id(node: str) -> int:
    """The node id of controller node ``node`` (-1: not a controller node)."""
    rest = node[len(CONTROLLER_PREFIX):] if node.startswith(CONTROLLER_PREFIX) else ""
    return int(rest) if rest.isdigit() else -1


def raft_node_id(node: str) -> int:
    """The Raft node id of ``node``: a controller's id, or a broker's (an observer of the
    metadata log); -1 for any other node."""
    if node.startswith(BROKER_PREFIX):
        rest = node[len(BROKER_PREFIX):]
        return int(rest) if rest.isdigit() else -1
    return controller_id(node)
