"""The broker actor: registration, heartbeats, the metadata cache.

One per broker node, beside the broker's partition replicas. It does what Kafka's
``BrokerLifecycleManager``, ``MetadataCache`` and (the offset-storage half of) the
``GroupCoordinator`` do:

* registers with the controller at start-up, saying whether the last shutdown was clean
  (KAFKA-15586); gets a broker epoch; heartbeats every ``broker.heartbeat.interval.ms``;
  re-registers when the controller does not recognise its epoch;
* keeps the metadata cache (leader and leader epoch per partition) and routes the
  controller's PartitionState (LeaderAndIsr) and BrokerStates to the local replicas,
  dropping those from a stale controller epoch; a state that newly lists this broker goes to
  the replica manager, which creates the replica, and one that no longer lists it is
  followed by a StopReplica that deletes it (a reassignment);
* answers clients' Metadata requests (the leaders of ``__consumer_offsets`` partitions
  too: a client finds its group's coordinator there, as FindCoordinator answers);
* **controlled shutdown** (``controlled.shutdown.enable``): asked to stop, it asks the
  controller to move its leaderships first (``ControlledShutdownRequest``), again after
  ``controlled.shutdown.retry.backoff.ms`` while it still leads something, at most
  ``controlled.shutdown.max.retries`` times (``KafkaServer.controlledShutdown``); then it
  is ready to stop (``shutdown_ready``: the runtime stops the process cleanly).

The broker's partition replicas, fetcher threads and group coordinator run in the
replica-manager task (:mod:`actors.replica_manager`, :mod:`actors.coordinator`).
"""

from __future__ import annotations

from typing import Any

from actors.core import Address, Machine
from actors.fetcher import REPLICA_MANAGER
from actors.log import BrokerDisk
from actors.messages import (
    DUPLICATE_BROKER_REGISTRATION,
    BrokerHeartbeat,
    BrokerHeartbeatResponse,
    BrokerRegistration,
    BrokerRegistrationResponse,
    BrokerStates,
    ControlledShutdown,
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    MetadataRequest,
    MetadataResponse,
    PartitionState,
    StopReplica,
    Tick,
    metadata_view_crc,
)
from actors.quorum_messages import NotController

CONTROLLER: Address = ("controller", "controller")


class Broker(Machine):
    def __init__(self, node: str, broker_id: int, disk: BrokerDisk, *, incarnation: int,
                 hosted: tuple[tuple[str, int], ...] | list[tuple[str, int]],
                 heartbeat_interval_ms: int, heartbeat_timeout_ms: int = 4500,
                 registration_retry_ms: int = 1000, controllers: tuple[str, ...] = ()) -> None:
        super().__init__(node, "broker")
        self.broker_id = broker_id
        self.disk = disk
        self.incarnation = incarnation
        #: the partitions this broker is a replica of (its replica manager hosts them)
        self.hosted = set(hosted)
        self.heartbeat_interval_ms = heartbeat_interval_ms
        #: how long a heartbeat may go unanswered before the broker closes its connection to
        #: the controller and opens a new one: half the session, as KRaft's heartbeat
        #: channel is configured (``BrokerServer``, KAFKA-14392; the ZooKeeper client's
        #: read timeout, two thirds of its session, plays that part in the older eras)
        self.heartbeat_timeout_ms = heartbeat_timeout_ms
        #: when the oldest heartbeat still unanswered was sent (-1: none)
        self._heartbeat_unanswered_us = -1
        self.registration_retry_ms = registration_retry_ms
        self.broker_epoch = -1
        self.controller_epoch = -1
        self.metadata: dict[tuple[str, int], tuple[int, int]] = {}
        self.clean_shutdown = disk.clean_shutdown
        self._registering = 0
        self.partition_epochs: dict[tuple[str, int], int] = {}
        self.broker_states: tuple[tuple[int, int, bool], ...] = ()
        #: controlled shutdown: "" (running), "requested", "ready" (the process may stop)
        self.shutdown_state = ""
        self._shutdown_tries = 0
        self._shutdown_max_retries = 0
        self._shutdown_backoff_ms = 0
        #: with a controller quorum (``cluster.controller_quorum``): the controller nodes,
        #: and the one this broker believes active (Kafka's ``ControllerNodeProvider``);
        #: without one, the single controller
        self.controllers = controllers
        self.controller_node = controllers[0] if controllers else CONTROLLER[0]

    @property
    def controller(self) -> Address:
        return (self.controller_node, CONTROLLER[1])

    def _follow(self, node: str, reason: str) -> None:
        if node != self.controller_node:
            self.controller_node = node
            self.emit("controller_followed", broker=self.broker_id, controller=node,
                      reason=reason)

    def _next_controller(self, leader_id: int = -1, reason: str = "timeout") -> None:
        """Fail over to the controller named (a NotController answer), else the next one
        (a request that timed out): ``RaftControllerNodeProvider`` learns the leader from
        the quorum; isrlab's broker learns it from the controllers' answers and from the
        committed states the active one sends."""
        if not self.controllers:
            return
        named = f"controller-{leader_id}"
        if leader_id >= 0 and named in self.controllers:
            self._follow(named, "not_controller")
        else:
            i = self.controllers.index(self.controller_node) if (
                self.controller_node in self.controllers) else -1
            self._follow(self.controllers[(i + 1) % len(self.controllers)], reason)

    def start(self) -> None:
        self._register()

    def _register(self) -> None:
        self._registering += 1
        self.send(self.controller, BrokerRegistration(self.broker_id, self.incarnation,
                                                 self.clean_shutdown))
        self.timer(self.registration_retry_ms, Tick("register_retry", self._registering, 0))

    def _await_controller(self) -> None:
        """Before a heartbeat or registration: if the controller has left one unanswered
        for ``heartbeat_timeout_ms``, the request timed out and the connection is closed
        (the next one opens a new connection); then this one starts the wait."""
        since = self._heartbeat_unanswered_us
        if since >= 0 and self.now_us - since >= self.heartbeat_timeout_ms * 1000:
            self.emit("request_failed", peer=self.controller_node,
                      request="BrokerHeartbeat" if self.broker_epoch >= 0
                      else "BrokerRegistration", reason="timeout")
            self.disconnect(self.controller_node)
            self._next_controller()
            since = -1
        self._heartbeat_unanswered_us = self.now_us if since < 0 else since

    def _request_shutdown(self) -> None:
        if self._shutdown_tries > self._shutdown_max_retries or self.broker_epoch < 0:
            self.shutdown_state = "ready"   # out of retries: stop anyway (still cleanly)
            return
        self._shutdown_tries += 1
        self.shutdown_state = "requested"
        self.send(self.controller, ControlledShutdownRequest(self.broker_id, self.broker_epoch))
        # an unanswered request is retried too
        self.timer(self._shutdown_backoff_ms, Tick("shutdown_retry", self._shutdown_tries, 0))

    def _view_crc(self) -> int:
        return metadata_view_crc(
            [(t, p, leader, epoch, self.partition_epochs.get((t, p), -1))
             for (t, p), (leader, epoch) in self.metadata.items()], self.broker_states)

    def handle(self, msg: Any, src: Address) -> None:
        t = type(msg)
        if (t is PartitionState or t is BrokerStates) and self.broker_epoch < 0:
            # Not registered in this incarnation: metadata is applied only after the
            # registration is acknowledged (KRaft's initial catch-up; ZooKeeper brokers
            # register before any LeaderAndIsr reaches them). A controller that still
            # knows the previous incarnation must not make this one a leader on its old
            # state; the view checksum in the first heartbeat brings everything back.
            return
        if t is PartitionState:
            if msg.controller_epoch < self.controller_epoch:
                return   # a zombie controller (controller-epoch fencing)
            self.controller_epoch = msg.controller_epoch
            if self.controllers and src[0] in self.controllers:
                self._follow(src[0], "published")   # the active controller publishes
            key = (msg.topic, msg.partition)
            if msg.partition_epoch < self.partition_epochs.get(key, -1):
                return   # reordered: an older state of the same controller
            self.partition_epochs[key] = msg.partition_epoch
            self.metadata[key] = (msg.leader, msg.leader_epoch)
            listed = self.broker_id in msg.replicas
            if key in self.hosted:
                self.send((self.node, f"{msg.topic}-{msg.partition}"), msg)
                if not listed:
                    # no longer a replica (a reassignment completed, or was cancelled,
                    # without it): stop the replica and delete its log
                    self.hosted.discard(key)
                    self.send((self.node, REPLICA_MANAGER), StopReplica(*key))
            elif listed:
                # a reassignment adds this broker: the replica manager creates the replica
                self.hosted.add(key)
                self.send((self.node, REPLICA_MANAGER), msg)
        elif t is BrokerStates:
            if msg.controller_epoch < self.controller_epoch:
                return
            self.controller_epoch = msg.controller_epoch
            if self.controllers and src[0] in self.controllers:
                self._follow(src[0], "published")
            self.broker_states = msg.brokers
            for tp in sorted(self.hosted):
                self.send((self.node, f"{tp[0]}-{tp[1]}"), msg)
        elif t is BrokerHeartbeatResponse:
            if msg.broker_epoch == self.broker_epoch:
                self._heartbeat_unanswered_us = -1
        elif t is BrokerRegistrationResponse:
            self._heartbeat_unanswered_us = -1
            if msg.broker_epoch == DUPLICATE_BROKER_REGISTRATION:
                if self.broker_epoch < 0:
                    # refused while the previous incarnation's session lasts: try again a
                    # heartbeat interval later (4.1.0 BrokerLifecycleManager
                    # .scheduleNextCommunicationAfterFailure)
                    self._registering += 1   # cancels the pending retry
                    self.timer(self.heartbeat_interval_ms,
                               Tick("register_retry", self._registering, 0))
                return
            if msg.broker_epoch < 0:
                self.broker_epoch = -1
                self._register()
                return
            if self.broker_epoch < 0:
                self.broker_epoch = msg.broker_epoch
                self._registering += 1   # cancels the retry timer
                self.timer(self.heartbeat_interval_ms, Tick("heartbeat", 0, 0))
        elif t is Tick:
            if msg.kind == "heartbeat":
                if self.broker_epoch >= 0:
                    self._await_controller()
                    self.send(self.controller, BrokerHeartbeat(self.broker_id, self.broker_epoch,
                                                              self._view_crc()))
                self.timer(self.heartbeat_interval_ms, Tick("heartbeat", 0, 0))
            elif (msg.kind == "shutdown_retry" and self.shutdown_state == "requested"
                  and msg.token == self._shutdown_tries):
                self._request_shutdown()
            elif msg.kind == "register_retry":
                if msg.token == self._registering and self.broker_epoch < 0:
                    self._await_controller()
                    self._register()
        elif t is NotController:
            # KRaft's NOT_CONTROLLER: ask the leader it names (at once, if that is another
            # node and this broker is not registered yet; else at the next heartbeat)
            was = self.controller_node
            self._next_controller(msg.leader_id, "not_controller")
            self._heartbeat_unanswered_us = -1
            if self.controller_node != was and self.broker_epoch < 0 and msg.leader_id >= 0:
                self._register()
        elif t is ControlledShutdown:
            if not self.shutdown_state:
                self._shutdown_max_retries = msg.max_retries
                self._shutdown_backoff_ms = msg.retry_backoff_ms
                self._request_shutdown()
        elif t is ControlledShutdownResponse:
            if self.shutdown_state == "requested" and msg.remaining == 0:
                self.shutdown_state = "ready"   # else the retry timer asks again
        elif t is MetadataRequest:
            parts = tuple((tp[0], tp[1], leader, epoch)
                          for tp, (leader, epoch) in sorted(self.metadata.items()))
            self.send(src, MetadataResponse(parts, msg.correlation))
