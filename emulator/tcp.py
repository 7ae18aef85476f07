"""TCP's part of the network: a connection's retransmission state and Linux's timers.

A connection here is a directed actor pair, ``(src actor, dst actor)``: the frames one
actor sends another, in order. Most connections have no state at all — their frames are
delivered one delay after they are sent (:class:`emulator.network.Network`). A
:class:`Stream` exists only while its connection is not plain:

* ``held`` is not None: frames the link did not carry (a cut, in flight or at send), in
  send order, waiting for the next retransmission at ``timer_us``; ``retries`` counts the
  retransmissions so far, each timeout twice the last (``tcp_rto_max`` at most);
* ``connecting``: the application closed its connection, and the next one's handshake has
  not crossed the link yet (SYN retransmitted after ``tcp_rto_initial``, doubling;
  ``deadline_us`` is when Kafka's ``socket.connection.setup.timeout.ms``, or the kernel's
  ``tcp_syn_retries``, gives up);
* ``last_us`` > now: a frame of it was retransmitted after a loss, and the later ones may
  not overtake it (head-of-line blocking).

The numbers are Linux's defaults (``net.ipv4.tcp_*``, include/net/tcp.h): ``TCP_RTO_MIN``
200 ms, ``TCP_RTO_MAX`` 120 s, ``TCP_TIMEOUT_INIT`` 1 s, ``tcp_retries2`` 15,
``tcp_syn_retries`` 6; scenarios set them under ``[network]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from actors.eras import ERAS

Address = tuple[str, str]
#: a frame held by a connection: (dst actor, src actor, msgpack bytes)
Held = tuple[Address, Address, bytes]


@dataclass(frozen=True, slots=True)
class TcpConfig:
    rto_min_ms: float = 200.0
    rto_max_ms: float = 120_000.0
    rto_initial_ms: float = 1_000.0
    retries2: int = 15
    syn_retries: int = 6
    #: Kafka's ``socket.connection.setup.timeout.ms`` and its maximum (KIP-601, 2.7+): an
    #: attempt that has not connected in time is closed; each consecutive failure doubles
    #: it. 0: not in the era (the kernel's SYN retries decide)
    setup_timeout_ms: float = 0.0
    setup_timeout_max_ms: float = 0.0

    @property
    def rto_min_us(self) -> int:
        return int(self.rto_min_ms * 1000)

    @property
    def rto_max_us(self) -> int:
        return int(self.rto_max_ms * 1000)

    @property
    def rto_initial_us(self) -> int:
        return int(self.rto_initial_ms * 1000)

    def setup_timeout_us(self, failures: int) -> int:
        """Kafka's connection setup timeout after ``failures`` failed attempts
        (``ClusterConnectionStates.connectionSetupTimeoutMs``, without its jitter)."""
        if self.setup_timeout_ms <= 0:
            return 0
        ms = min(self.setup_timeout_ms * (2 ** min(failures, 30)),
                 max(self.setup_timeout_max_ms, self.setup_timeout_ms))
        return int(ms * 1000)

    def syn_give_up_us(self) -> int:
        """When the kernel gives up a connect: after ``tcp_syn_retries`` retransmissions
        of the SYN, 1 s doubling (6: 1+2+4+8+16+32, then 64 s more: 127 s)."""
        return self.rto_initial_us * ((2 << self.syn_retries) - 1)


class Stream:
    """The retransmission state of one connection (see the module note)."""

    __slots__ = ("src", "dst", "held", "lost_in_flight", "retries", "since_us", "timer_us",
                 "last_us", "connecting", "deadline_us")

    def __init__(self, src: Address, dst: Address) -> None:
        self.src = src
        self.dst = dst
        self.held: list[Held] | None = None
        #: how many of ``held`` were lost in flight (they precede those held at send)
        self.lost_in_flight = 0
        self.retries = 0
        self.since_us = 0
        self.timer_us = 0
        self.last_us = 0
        self.connecting = False
        self.deadline_us = 0


#: the first era whose clients and brokers have ``socket.connection.setup.timeout.ms``
SETUP_TIMEOUT_ERA = "2.8"


def tcp_config(net: dict[str, Any], era: str) -> TcpConfig:
    """The TCP settings of a scenario's ``[network]`` table, for the era's Kafka (its
    connection setup timeout, KIP-601, is 2.7's: 10 s unless the table says otherwise)."""
    setup = net.get("socket.connection.setup.timeout.ms")
    if setup is None:
        setup = 10_000.0 if ERAS.index(era) >= ERAS.index(SETUP_TIMEOUT_ERA) else 0.0
    return TcpConfig(rto_min_ms=float(net.get("tcp_rto_min_ms", 200.0)),
                     rto_max_ms=float(net.get("tcp_rto_max_ms", 120_000.0)),
                     retries2=int(net.get("tcp_retries2", 15)),
                     syn_retries=int(net.get("tcp_syn_retries", 6)),
                     setup_timeout_ms=float(setup),
                     setup_timeout_max_ms=float(
                         net.get("socket.connection.setup.timeout.max.ms", 30_000.0)))
