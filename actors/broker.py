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
* with a controller quorum (``cluster.controller_quorum``), reads the metadata from the
  log instead: its :class:`~actors.quorum_controller.MetadataObserver` (a Raft observer,
  actor ``raft`` of the same node) applies the committed records and hands the changes to
  the same handling as above, and names the quorum leader it fetches from, which is the
  controller the broker's heartbeats, registration and AlterPartition go to; heartbeats
  carry the offset of the last record applied;
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
from actors.quorum_controller import MetadataObserver
from actors.quorum_messages import NotController

CONTROLLER: Address = ("controller", "controller")
#: the broker's ``reconnect.backoff.ms`` (Kafka's default): how long its channel to the
#: controller waits after closing a connection that answered NOT_CONTROLLER
CONTROLLER_RECONNECT_BACKOFF_MS = 50


class Broker(Machine):
    def __init__(self, node: str, broker_id: int, disk: BrokerDisk, *, incarnation: int,
                 hosted: tuple[tuple[str, int], ...] | list[tuple[str, int]],
                 heartbeat_interval_ms: int, heartbeat_timeout_ms: int = 4500,
                 registration_retry_ms: int = 1000, controllers: tuple[str, ...] = (),
                 observer: MetadataObserver | None = None) -> None:
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
        #: with a quorum: the broker's Raft observer of the metadata log (same task). The
        #: broker then sends to the leader it knows (once it knows one) and acts on the
        #: committed metadata it applies, once caught up with its own registration
        self.observer = observer
        self._leader_known = False
        self._caught_up = False
        if observer is not None:
            self.adopt(observer)
            observer.host = self

    @property
    def controller(self) -> Address:
        return (self.controller_node, CONTROLLER[1])

    def _follow(self, node: str, reason: str) -> None:
        if node != self.controller_node:
            self.controller_node = node
            self.emit("controller_followed", broker=self.broker_id, controller=node,
                      reason=reason)

    def _next_controller(self, leader_id: int = -1, reason: str = "timeout") -> None:
        """Without an observer: fail over to the controller named (a NotController answer),
        else the next one (a request that timed out). With one, the controller is the Raft
        leader the observer knows (:meth:`on_raft_leader`), as 3.7.0
        ``RaftControllerNodeProvider.getControllerInfo`` answers ``leaderAndEpoch``: a
        NOT_CONTROLLER answer or a timeout only makes the request go again."""
        if not self.controllers or self.observer is not None:
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
        if self.observer is None or self._leader_known:
            # with an observer, not before the quorum's leader is known (the channel to
            # the controller has no node to send to yet)
            self.send(self.controller, BrokerRegistration(self.broker_id, self.incarnation,
                                                     self.clean_shutdown))
        self.timer(self.registration_retry_ms, Tick("register_retry", self._registering, 0))

    # -- the metadata log (with a controller quorum) ---------------------------------------
    def on_raft_leader(self, node: str) -> None:
        """The observer learnt a new quorum leader: the controller from now on. A broker not
        registered yet registers with it at once."""
        if node not in self.controllers:
            return
        first = not self._leader_known
        self._leader_known = True
        if node != self.controller_node:
            self._follow(node, "raft_leader")
            self._heartbeat_unanswered_us = -1
        elif not first:
            return
        if self.broker_epoch < 0:
            self._register()

    def on_metadata(self, partitions: list[tuple[str, int]], brokers: bool) -> None:
        """The observer applied committed records: publish what changed to the replicas,
        as the controller's PartitionState / BrokerStates did. Nothing before this broker
        has applied its own registration record, then the whole image at once: 3.7.0
        ``BrokerServer.startup`` waits for the initial catch-up (the controller's
        ``isCaughtUp``: the heartbeat's ``currentMetadataOffset`` reached the registration
        record's offset, ``ReplicationControlManager.processBrokerHeartbeat``) and for the
        first publish, which ``MetadataLoader`` makes once it has read up to the high
        watermark it found (docs/fidelity.md: isrlab gates on the first condition only)."""
        if not self._caught_up:
            self._maybe_caught_up()
            return
        if brokers:
            self._on_broker_states(self._image_broker_states())
        for key in partitions:
            self._publish_image(key)

    def _maybe_caught_up(self) -> None:
        obs = self.observer
        if obs is None or self._caught_up or self.broker_epoch < 0:
            return
        rec = obs.image.brokers.get(self.broker_id)
        if rec is None or rec.epoch != self.broker_epoch:
            return
        self._caught_up = True
        self._on_broker_states(self._image_broker_states())
        for key in sorted(obs.image.partitions):
            if obs.image.partitions[key].partition_epoch >= 0:   # decided by a controller
                self._publish_image(key)

    def _image_broker_states(self) -> BrokerStates:
        assert self.observer is not None
        image = self.observer.image
        return BrokerStates(image.controller_epoch, tuple(
            (b, r.epoch, r.fenced) for b, r in sorted(image.brokers.items())))

    def _publish_image(self, key: tuple[str, int]) -> None:
        assert self.observer is not None
        image = self.observer.image
        p = image.partitions.get(key)
        if p is not None:
            self._on_partition_state(PartitionState(
                image.controller_epoch, p.topic, p.partition, p.replicas, p.leader,
                p.leader_epoch, p.isr, p.elr, p.partition_epoch, p.recovering, p.adding,
                p.removing))

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
            self._on_partition_state(msg)
        elif t is BrokerStates:
            self._on_broker_states(msg)
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
                self._maybe_caught_up()
        elif t is Tick:
            if msg.kind == "heartbeat":
                if self.broker_epoch >= 0:
                    self._await_controller()
                    # with a quorum, the offset of the last metadata record applied
                    # (BrokerHeartbeatRequest.currentMetadataOffset); else the view checksum
                    self.send(self.controller, BrokerHeartbeat(
                        self.broker_id, self.broker_epoch,
                        self.observer.offset if self.observer is not None
                        else self._view_crc()))
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
            # node and this broker is not registered yet; else at the next heartbeat); with
            # an observer, the quorum's leader stays the controller (the retry goes there)
            was = self.controller_node
            self._next_controller(msg.leader_id, "not_controller")
            self._heartbeat_unanswered_us = -1
            if self.controller_node != was and self.broker_epoch < 0 and msg.leader_id >= 0:
                self._register()
            elif self.observer is not None and self.broker_epoch < 0:
                # the quorum's leader has not claimed the active role yet: 3.7.0
                # NodeToControllerRequestThread.handleResponse disconnects and puts the
                # registration back first in its queue; it goes again to the Raft leader
                # once the connection's reconnect.backoff.ms has passed (not at the
                # registration's own retry, a second later)
                self._registering += 1   # cancels the pending retry
                self.timer(CONTROLLER_RECONNECT_BACKOFF_MS,
                           Tick("register_retry", self._registering, 0))
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

    # -- the metadata the controller decided ------------------------------------------------
    def _on_partition_state(self, msg: PartitionState) -> None:
        """A partition's state (pushed by the controller, or applied from the metadata log):
        the metadata cache, and the local replica or replica manager."""
        if msg.controller_epoch < self.controller_epoch:
            return   # a zombie controller (controller-epoch fencing)
        self.controller_epoch = msg.controller_epoch
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

    def _on_broker_states(self, msg: BrokerStates) -> None:
        if msg.controller_epoch < self.controller_epoch:
            return
        self.controller_epoch = msg.controller_epoch
        self.broker_states = msg.brokers
        for tp in sorted(self.hosted):
            self.send((self.node, f"{tp[0]}-{tp[1]}"), msg)
