"""The controller: broker liveness, partition leadership and the committed ISR.

Modelled on KRaft's ``ReplicationControlManager`` and ``PartitionChangeBuilder``, with
ZooKeeper-era behaviour (``KafkaController``, ``PartitionStateMachine``) where the era asks
for it:

* **Brokers** register (getting a fresh, monotonic broker epoch) and heartbeat; a broker
  that misses ``broker.session.timeout.ms`` of heartbeats, or re-registers with a new
  incarnation, is fenced: removed from every ISR — except that without ELR the ISR never
  becomes empty ("last replica standing") — and replaced as leader.
* **Elections** (``electAnyLeader``): keep a valid leader; else the first live ISR member
  in assignment order (clean); else, with ELR and an empty ISR, the first live ELR member
  (elr); else, with ``unclean.leader.election.enable``, the first live replica (unclean,
  ISR := [leader], recovering). Every leader change bumps the leader epoch; every change
  bumps the partition epoch.
* **ELR** (KIP-966, era 4.1): ``maybePopulateTargetElr`` after every ISR change; brokers
  restarting after an unclean shutdown are removed from ISR and ELR (KAFKA-15586). The
  last-known ELR holds the last leader once the ISR empties (4.1.0's
  ``maybeUpdateLastKnownLeader``), which is elected, uncleanly, when it is back and ISR and
  ELR are both empty.
* **AlterPartition** is validated against the leader epoch, the partition epoch and — in
  eras with KIP-903 — the broker epochs of the proposed members.
* The **controller epoch** bumps on every controller start; brokers drop PartitionStates
  of an older controller epoch.
* **Preferred elections** (``ReplicationControlManager.electLeaders`` with
  ``ElectionType.PREFERRED``, ``kafka-leader-election --election-type preferred``): the first
  replica of the assignment becomes leader when it is in the ISR and unfenced; otherwise
  ELECTION_NOT_NEEDED (it leads already) or PREFERRED_LEADER_NOT_AVAILABLE — never an unclean
  election. **Auto leader rebalance** (``auto.leader.rebalance.enable``, every
  ``leader.imbalance.check.interval.seconds``): KRaft (``maybeBalancePartitionLeaders``)
  elects the preferred leader of every imbalanced partition that can take it; the
  ZooKeeper controller (``checkAndTriggerAutoLeaderRebalance``) does so only for the
  preferred brokers whose share of partitions they prefer but do not lead is above
  ``leader.imbalance.per.broker.percentage``.

* **Reassignment** (KIP-455, ``changePartitionReassignment`` / ``cancelPartitionReassignment``
  and ``PartitionChangeBuilder.completeReassignmentIfNeeded``; the ZooKeeper eras'
  ``onPartitionReassignment``): :mod:`actors.reassignment` computes the replica lists; every
  partition change completes a move whose target replicas are all in the ISR (its adding
  ones only before 3.8, KAFKA-15665), moving the leader off a removed replica; traced as
  ``reassignment`` steps with AR and ISR and as ``replicas_change``.
* **Brokers leaving**: ``UnregisterBroker`` (``kafka-cluster unregister``) fences, then forgets,
  a decommissioned broker; partition states go to every registered broker.

Controller state that Kafka keeps in the metadata log (or ZooKeeper) lives in
:class:`ControllerStore`, which survives controller crashes; heartbeat times are volatile.
Every partition change is traced as ``partition_state`` with the ZooKeeper path the seeds
name, and as ``leader_elected`` / ``isr_change`` / ``partition_offline``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actors.core import Address, Machine
from actors.election import elect_leader
from actors.eras import Rules
from actors.messages import (
    DUPLICATE_BROKER_REGISTRATION,
    FENCED_LEADER_EPOCH,
    INELIGIBLE_REPLICA,
    INVALID_UPDATE_VERSION,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    STALE_BROKER_EPOCH,
    AlterPartition,
    AlterPartitionReassignments,
    AlterPartitionReassignmentsResponse,
    AlterPartitionResponse,
    BrokerHeartbeat,
    BrokerHeartbeatResponse,
    BrokerRegistration,
    BrokerRegistrationResponse,
    BrokerStates,
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    CreatePartitions,
    CreateTopics,
    ElectLeaders,
    ElectLeadersResponse,
    PartitionState,
    Tick,
    UnregisterBroker,
    metadata_view_crc,
)
from actors.reassignment import Assignment, invalid_target, maybe_complete, revert, start
from actors.replica import InvariantViolation


@dataclass(slots=True)
class PartitionRecord:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    min_isr: int
    unclean: bool
    leader: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    partition_epoch: int = -1
    recovering: bool = False
    #: KIP-455: the replicas an ongoing reassignment is adding and removing (both are in
    #: ``replicas``: the target replicas first, then the removing ones)
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def assignment(self) -> Assignment:
        return Assignment(self.replicas, self.adding, self.removing)


@dataclass(slots=True)
class BrokerRecord:
    epoch: int
    incarnation: int
    fenced: bool
    #: in controlled shutdown: never elected, out of every ISR it can leave
    shutting_down: bool = False


@dataclass
class ControllerStore:
    """The metadata quorum's state (durable across controller crashes)."""

    partitions: dict[tuple[str, int], PartitionRecord] = field(default_factory=dict)
    brokers: dict[int, BrokerRecord] = field(default_factory=dict)
    controller_epoch: int = 0
    next_broker_epoch: int = 1
    bootstrapped: bool = False

    def crash(self, power_loss: bool, now_ms: int = 0) -> None:
        return None   # replicated metadata: nothing is lost


class Controller(Machine):
    def __init__(self, store: ControllerStore, rules: Rules, *, brokers: tuple[int, ...],
                 session_timeout_ms: int, invariants: bool = False,
                 auto_leader_rebalance: bool = False, imbalance_check_interval_ms: int = 300_000,
                 imbalance_per_broker_pct: int = 10) -> None:
        super().__init__("controller", "controller")
        self.store = store
        self.rules = rules
        self.all_brokers = brokers
        self.session_timeout_ms = session_timeout_ms
        self.invariants = invariants
        self.auto_leader_rebalance = auto_leader_rebalance
        self.imbalance_check_interval_ms = imbalance_check_interval_ms
        self.imbalance_per_broker_pct = imbalance_per_broker_pct
        self.last_heartbeat: dict[int, int] = {}
        #: the session check armed: its token (a newer one makes an older tick a no-op) and,
        #: in the "deadline" mode, the time it is armed for (-1: none)
        self._check_token = 0
        self._check_at = -1
        #: how sessions are checked: "zookeeper" (the ZooKeeper eras: every expired broker at
        #: each 500 ms check), or the KRaft era's ``Rules.stale_broker_check``
        self._check_mode = "zookeeper" if rules.zk_controller else rules.stale_broker_check
        #: the broker whose unclean shutdown the controller is handling, never an acceptable
        #: leader meanwhile (-1: none)
        self._unclean_restart = -1

    # -- helpers -------------------------------------------------------------------------
    def _live(self, broker: int) -> bool:
        rec = self.store.brokers.get(broker)
        return rec is not None and not rec.fenced

    def _acceptable(self, broker: int) -> bool:
        """``isAcceptableLeader``: unfenced and not in controlled shutdown (nor the broker
        whose unclean shutdown is being handled: see ``_handle_unclean_shutdown``)."""
        rec = self.store.brokers.get(broker)
        return (rec is not None and not rec.fenced and not rec.shutting_down
                and broker != self._unclean_restart)

    def _state_msg(self, p: PartitionRecord) -> PartitionState:
        return PartitionState(self.store.controller_epoch, p.topic, p.partition, p.replicas,
                              p.leader, p.leader_epoch, p.isr, p.elr, p.partition_epoch,
                              p.recovering, p.adding, p.removing)

    def _known_brokers(self) -> list[int]:
        """The brokers the cluster started with and every one registered since."""
        return sorted(set(self.all_brokers) | set(self.store.brokers))

    def _broadcast(self, p: PartitionRecord) -> None:
        msg = self._state_msg(p)
        for b in self._known_brokers():
            if self._live(b) or b in p.replicas:
                self.send((f"broker-{b}", "broker"), msg)

    def _broker_states(self) -> BrokerStates:
        return BrokerStates(self.store.controller_epoch, tuple(
            (b, r.epoch, r.fenced) for b, r in sorted(self.store.brokers.items())))

    def _broadcast_broker_states(self) -> None:
        msg = self._broker_states()
        for b in self._known_brokers():
            if b in self.store.brokers:
                self.send((f"broker-{b}", "broker"), msg)

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        st = self.store
        st.controller_epoch += 1
        now = self.now_ms
        for b, rec in sorted(st.brokers.items()):
            if not rec.fenced:
                self.last_heartbeat[b] = now   # a fresh session for everyone
        self.emit("controller_elected", controller_epoch=st.controller_epoch)
        if st.bootstrapped:
            # the new controller loads the partition states and publishes them under its
            # epoch; brokers drop anything a previous controller still has in flight
            for key in sorted(st.partitions):
                self._publish(st.partitions[key])
            self._broadcast_broker_states()
        if self._check_mode != "deadline":
            self._arm_session_check(self._check_period_ms())
        # "deadline" (3.7): armed by the first heartbeat or registration, as Kafka's active
        # controller arms it (rescheduleMaybeFenceStaleBrokers is not called on activation)
        if self.auto_leader_rebalance:
            self.timer(self.imbalance_check_interval_ms, Tick("leader_balance", 0, 0))

    def handle(self, msg: Any, src: Address) -> None:
        t = type(msg)
        if t is BrokerHeartbeat:
            rec = self.store.brokers.get(msg.broker)
            if rec is None or rec.epoch != msg.broker_epoch:
                self.send(src, BrokerRegistrationResponse(msg.broker, -1,
                                                          self.store.controller_epoch))
                return
            self.send(src, BrokerHeartbeatResponse(msg.broker, msg.broker_epoch))
            if not rec.shutting_down:   # stopping: its heartbeats neither unfence it nor
                self.last_heartbeat[msg.broker] = self.now_ms   # keep its session
                if rec.fenced:
                    self._unfence(msg.broker)
                elif msg.metadata_crc != self._view_crc():
                    self._catch_up(msg.broker)
            self._rearm_session_deadline()
        elif t is AlterPartition:
            self._on_alter_partition(msg, src)
        elif t is BrokerRegistration:
            self._on_registration(msg, src)
            self._rearm_session_deadline()
        elif t is ElectLeaders:
            self._on_elect_leaders(msg, src)
        elif t is ControlledShutdownRequest:
            self._on_controlled_shutdown(msg, src)
        elif t is AlterPartitionReassignments:
            self._on_alter_reassignments(msg, src)
        elif t is UnregisterBroker:
            self._unregister(msg.broker)
        elif t is CreateTopics:
            self._on_create_topics(msg)
        elif t is CreatePartitions:
            self._on_create_partitions(msg)
        elif t is Tick and msg.kind == "leader_balance":
            self._balance_leaders()
            self.timer(self.imbalance_check_interval_ms, Tick("leader_balance", 0, 0))
        elif t is Tick:
            if msg.token == self._check_token:
                self._on_session_check()
        if self.invariants:
            for key in sorted(self.store.partitions):
                p = self.store.partitions[key]
                if p.leader >= 0 and p.leader not in p.isr:
                    raise InvariantViolation(
                        f"controller: leader {p.leader} of {p.topic}-{p.partition} "
                        f"not in ISR {p.isr}")
                if any(b not in p.replicas for b in p.isr):
                    raise InvariantViolation(
                        f"controller: ISR {p.isr} of {p.topic}-{p.partition} not in AR "
                        f"{p.replicas}")

    def _on_registration(self, m: BrokerRegistration, src: Address) -> None:
        st = self.store
        old = st.brokers.get(m.broker)
        if old is not None and old.incarnation == m.incarnation and not old.fenced:
            # a retried registration of the same incarnation: answer again
            self.send(src, BrokerRegistrationResponse(m.broker, old.epoch, st.controller_epoch))
            return
        if (old is not None and old.incarnation != m.incarnation and not old.fenced
                and self.rules.duplicate_registration_refused
                and self.now_ms - self.last_heartbeat.get(m.broker, self.now_ms)
                <= self.session_timeout_ms):
            # KRaft (3.7.0/4.1.0 ClusterControlManager.registerBroker): while the previous
            # incarnation's session is valid (BrokerHeartbeatManager.hasValidSession:
            # unfenced, heard from within the session timeout) a new one is refused. The
            # old one keeps its ISRs and leaderships until the session check fences it.
            self.emit("broker_registration_refused", broker=m.broker,
                      error="DUPLICATE_BROKER_REGISTRATION")
            self.send(src, BrokerRegistrationResponse(m.broker, DUPLICATE_BROKER_REGISTRATION,
                                                      st.controller_epoch))
            return
        if old is not None and old.incarnation == m.incarnation:
            # the same process lost its session (fenced) and registers again: no restart,
            # so no unclean shutdown to handle; it gets a new broker epoch
            restarted = False
        else:
            restarted = True
            if old is not None and not old.fenced and self.rules.fence_on_reregistration:
                # KRaft, and ZooKeeper since KIP-380 (2.2): the old incarnation is failed at
                # once. Before, a restart inside the session went unnoticed and kept its ISR
                # membership and leadership, which is what KIP-101's scenarios rely on
                self._fence(m.broker, "re-registered")
        epoch = st.next_broker_epoch
        st.next_broker_epoch += 1
        st.brokers[m.broker] = BrokerRecord(epoch, m.incarnation, fenced=False)
        self.last_heartbeat[m.broker] = self.now_ms
        self.emit("broker_registered", broker=m.broker, broker_epoch=epoch,
                  clean_shutdown=m.clean_shutdown)
        if self.rules.unclean_shutdown_detection and restarted and not m.clean_shutdown:
            self._handle_unclean_shutdown(m.broker)
        self.send(src, BrokerRegistrationResponse(m.broker, epoch, st.controller_epoch))
        self._broadcast_broker_states()
        if not st.bootstrapped and all(b in st.brokers for b in self.all_brokers):
            st.bootstrapped = True
            for key in sorted(st.partitions):
                self._elect_initial(st.partitions[key])
        elif st.bootstrapped:
            for key in sorted(st.partitions):
                p = st.partitions[key]
                if m.broker not in p.replicas:
                    continue
                if p.leader < 0:
                    self._try_elect(p, "broker_registered")
                else:
                    self.send(src, self._state_msg(p))

    def _view_crc(self) -> int:
        parts = [(p.topic, p.partition, p.leader, p.leader_epoch, p.partition_epoch)
                 for p in self.store.partitions.values()]
        return metadata_view_crc(parts, self._broker_states().brokers)

    def _catch_up(self, broker: int) -> None:
        """A broker behind on the metadata log gets every partition state again (KRaft
        brokers fetch the metadata log; a lost PartitionState must not strand them)."""
        dst = (f"broker-{broker}", "broker")
        for key in sorted(self.store.partitions):
            self.send(dst, self._state_msg(self.store.partitions[key]))
        self.send(dst, self._broker_states())

    def _unfence(self, broker: int) -> None:
        """A fenced broker heartbeating with its current epoch is unfenced again."""
        self.store.brokers[broker].fenced = False
        self.emit("broker_unfenced", broker=broker)
        self._broadcast_broker_states()
        for key in sorted(self.store.partitions):
            p = self.store.partitions[key]
            if broker in p.replicas and p.leader < 0:
                self._try_elect(p, "broker_registered")
        self._catch_up(broker)

    def _elect_initial(self, p: PartitionRecord) -> None:
        if p.partition_epoch >= 0:
            return   # created by a CreateTopics / CreatePartitions before the bootstrap
        # as a topic is created (``_create``): the replicas that are unfenced and not
        # shutting down (``isActive``) make the ISR, the first of them leads
        p.isr = tuple(b for b in p.replicas if self._acceptable(b)) or p.replicas
        p.leader = p.isr[0]
        p.leader_epoch = 0
        p.partition_epoch = 0
        self.emit("isr_change", topic=p.topic, partition=p.partition, old=[],
                  new=list(p.isr), reason="create", leader_epoch=0, partition_epoch=0)
        if p.isr != p.replicas:
            # the replica list, which the creation's ISR names only when every replica is
            # active (the checkers read it from there: ``traces.checker``); only then, so
            # that the traces of a bootstrap with every broker active stay as they were
            self.emit("replicas_change", topic=p.topic, partition=p.partition, old=[],
                      new=list(p.replicas), adding=[], removing=[], reason="create")
        self._elected(p, "preferred")

    # -- topics and partitions (CreateTopics, CreatePartitions) ------------------------------
    def _partition_count(self, topic: str) -> int:
        return sum(1 for t, _ in self.store.partitions if t == topic)

    def _on_create_topics(self, m: CreateTopics) -> None:
        """``ReplicationControlManager.createTopic``: TOPIC_ALREADY_EXISTS for a known name;
        else its partitions are placed and created as :meth:`_create` does."""
        if self._partition_count(m.topic):
            self._create_result(m.topic, "CreateTopics", -1, m.partitions,
                                "TOPIC_ALREADY_EXISTS")
            return
        self._create(m.topic, 0, m.partitions, m.replication_factor, m.min_isr, m.unclean,
                     "CreateTopics")

    def _on_create_partitions(self, m: CreatePartitions) -> None:
        """``ReplicationControlManager.createPartitions`` (KIP-195): only an increase is
        valid (INVALID_PARTITIONS otherwise); the replication factor is the length of the
        first partition's replica list — its whole list, so during a reassignment of it
        the removing replicas count too, as ``topicInfo.parts`` gives them in Kafka (the
        ZooKeeper eras' ``AdminZkClient.createPartitions`` reads partition 0 the same way);
        the topic's configs (min ISR, unclean election) carry over."""
        have = self._partition_count(m.topic)
        first = self.store.partitions.get((m.topic, 0))
        if not have or first is None:
            err = "UNKNOWN_TOPIC_OR_PARTITION"
        elif m.count <= have:
            err = "INVALID_PARTITIONS"
        else:
            self._create(m.topic, have, m.count, len(first.replicas), first.min_isr,
                         first.unclean, "CreatePartitions")
            return
        self._create_result(m.topic, "CreatePartitions", have, m.count, err)

    def _create_result(self, topic: str, request: str, old: int, count: int, error: str,
                       placed: list[tuple[int, ...]] | None = None) -> None:
        """The ``create_partitions`` event: the request, the count before and asked for,
        the error, and the replica lists placed (none on an error)."""
        self.emit("create_partitions", topic=topic, request=request, old=old, count=count,
                  error=error, replicas=[list(r) for r in placed or ()])

    def _place(self, first: int, count: int, rf: int) -> list[tuple[int, ...]] | str:
        """Replica lists for partitions ``first`` .. ``count - 1``, or an error.

        KRaft's ``StripedReplicaPlacer`` places on the registered brokers that are not
        shutting down, a partition's leader slot on an unfenced one and fenced brokers only
        when unfenced ones run out; INVALID_REPLICATION_FACTOR when every broker is fenced
        or fewer brokers than ``rf`` are registered. The ZooKeeper eras'
        ``AdminUtils.assignReplicasToBrokers`` places on the live brokers only. Kafka
        shuffles its start with a random; isrlab rotates deterministically (partition
        ``p`` starts at the ``p``-th broker), which is the placement the cluster was
        created with (docs/fidelity.md)."""
        st = self.store
        if self.rules.zk_controller:
            up = [b for b in sorted(st.brokers) if not st.brokers[b].fenced]
            fenced: list[int] = []
        else:
            usable = [b for b in sorted(st.brokers) if not st.brokers[b].shutting_down]
            up = [b for b in usable if not st.brokers[b].fenced]
            fenced = [b for b in usable if st.brokers[b].fenced]
        if not up or rf > len(up) + len(fenced) or rf <= 0:
            return "INVALID_REPLICATION_FACTOR"
        out = []
        for p in range(first, count):
            k, j = p % len(up), p % max(1, len(fenced))
            out.append(tuple((up[k:] + up[:k] + fenced[j:] + fenced[:j])[:rf]))
        return out

    def _create(self, topic: str, first: int, count: int, rf: int, min_isr: int,
                unclean: bool, request: str) -> None:
        """New partitions ``first`` .. ``count - 1``: each one's ISR is its replicas that
        are unfenced and not shutting down (``isActive``), its leader the first of them,
        leader and partition epoch 0 (``buildPartitionRegistration``); published to every
        broker, whose replica manager creates the replica with an empty log where it is
        listed."""
        placed = self._place(first, count, rf)
        if isinstance(placed, str):
            self._create_result(topic, request, first, count, placed)
            return
        self._create_result(topic, request, first, count, NONE, placed)
        for p, replicas in enumerate(placed, start=first):
            isr = tuple(b for b in replicas if self._acceptable(b))
            rec = self.store.partitions[(topic, p)] = PartitionRecord(
                topic, p, replicas, min_isr, unclean, leader=isr[0], leader_epoch=0, isr=isr,
                partition_epoch=0)
            self.emit("replicas_change", topic=topic, partition=p, old=[], new=list(replicas),
                      adding=[], removing=[], reason="create")
            self.emit("isr_change", topic=topic, partition=p, old=[], new=list(isr),
                      reason="create_partitions", leader_epoch=0, partition_epoch=0)
            self._elected(rec, "preferred")

    # -- preferred elections -----------------------------------------------------------
    def _elect_preferred(self, p: PartitionRecord) -> str:
        """``PartitionChangeBuilder`` with ``Election.PREFERRED``: the first replica of the
        assignment, if it is in the ISR and unfenced; never anything else."""
        preferred = p.replicas[0]
        if p.leader == preferred:
            return "ELECTION_NOT_NEEDED"
        if preferred not in p.isr or not self._acceptable(preferred):
            return "PREFERRED_LEADER_NOT_AVAILABLE"
        self._new_leader(p, preferred, "preferred")
        return NONE

    def _on_elect_leaders(self, m: ElectLeaders, src: Address) -> None:
        """``ReplicationControlManager.electLeaders`` (PREFERRED): one result per partition,
        every partition when none is named. Traced as ``elect_leaders``; answered unless
        the request came from the runtime (a scripted or nemesis step)."""
        st = self.store.partitions
        keys = list(m.partitions) if m.partitions else sorted(st)
        results = []
        for topic, part in keys:
            p = st.get((topic, part))
            err = ("UNKNOWN_TOPIC_OR_PARTITION" if p is None or p.partition_epoch < 0
                   or m.election_type != "preferred"
                   else self._elect_preferred(p))
            results.append((topic, part, err))
        self.emit("elect_leaders", election_type=m.election_type, trigger="request",
                  results=[f"{t}-{p}:{e}" for t, p, e in results])
        if src[1] != "sim":
            self.send(src, ElectLeadersResponse(tuple(results), m.correlation))

    def _balance_leaders(self) -> None:
        """The periodic leader rebalance (see the module note)."""
        st = self.store.partitions
        movable = [k for k in sorted(st) if st[k].leader != st[k].replicas[0]
                   and st[k].replicas[0] in st[k].isr
                   and self._acceptable(st[k].replicas[0])]
        if self.rules.zk_controller:
            # KafkaController.checkAndTriggerAutoLeaderRebalance (2.8.0): nothing moves
            # while any partition is being reassigned (partitionsBeingReassigned.isEmpty);
            # per preferred broker, the share of the partitions preferring it that it does
            # not lead — an offline partition (NoLeader) among them — weighed against
            # leader.imbalance.per.broker.percentage
            if any(st[k].adding or st[k].removing for k in st):
                return
            chosen = []
            for b in sorted({st[k].replicas[0] for k in st}):
                mine = [k for k in sorted(st) if st[k].replicas[0] == b]
                off = [k for k in mine if st[k].leader != b]
                if mine and len(off) * 100 > self.imbalance_per_broker_pct * len(mine):
                    chosen += [k for k in off if k in movable]
            movable = sorted(chosen)
        if not movable:
            return
        results = [(k[0], k[1], self._elect_preferred(st[k])) for k in movable]
        self.emit("elect_leaders", election_type="preferred", trigger="auto_leader_rebalance",
                  results=[f"{t}-{p}:{e}" for t, p, e in results])

    # -- partition reassignment (KIP-455) ------------------------------------------------
    def _on_alter_reassignments(self, m: AlterPartitionReassignments, src: Address) -> None:
        """``alterPartitionReassignments``: per partition, a new target (start or replace a
        reassignment) or a cancellation (an empty list). Traced as ``alter_reassignments``
        with one result per partition; answered unless the request came from the runtime."""
        results = []
        for topic, part, target in m.parts:
            p = self.store.partitions.get((topic, part))
            if p is None or p.partition_epoch < 0:   # not created yet
                err = "UNKNOWN_TOPIC_OR_PARTITION"
            elif not target:
                err = self._cancel_reassignment(p)
            else:
                err = self._reassign(p, tuple(target))
            results.append((topic, part, err))
        self.emit("alter_reassignments",
                  results=[f"{t}-{p}:{e}" for t, p, e in results],
                  targets=[f"{t}-{p}:{','.join(map(str, r)) or 'cancel'}"
                           for t, p, r in m.parts])
        if src[1] != "sim":
            self.send(src, AlterPartitionReassignmentsResponse(tuple(results), m.correlation))

    def _reassign(self, p: PartitionRecord, target: tuple[int, ...]) -> str:
        """``changePartitionReassignment`` (KRaft) / ``onPartitionReassignment`` (ZooKeeper
        eras): the replica list becomes the target followed by the removing replicas; the
        adding ones start empty, outside the ISR, and the reassignment completes when they
        are all in it (at once when they already are)."""
        why = invalid_target(target, sorted(self.store.brokers))
        if why:
            self.emit("reassignment", topic=p.topic, partition=p.partition, phase="rejected",
                      target=list(target), error="INVALID_REPLICA_ASSIGNMENT", detail=why)
            return "INVALID_REPLICA_ASSIGNMENT"
        new = start(p.assignment, target, zk=self.rules.zk_controller)
        self.emit("reassignment", topic=p.topic, partition=p.partition, phase="start",
                  target=list(target), replicas=list(new.replicas), adding=list(new.adding),
                  removing=list(new.removing), isr=list(p.isr))
        self._change(p, p.isr, "reassign", leader_gone=False, assignment=new)
        return NONE

    def _cancel_reassignment(self, p: PartitionRecord) -> str:
        """``cancelPartitionReassignment``: back to the original replicas
        (``PartitionReassignmentRevert``). When the ISR held only adding replicas the
        first original replica is put back in it alone — refused unless the topic allows
        unclean elections, and then a step that can lose acknowledged records. The
        ZooKeeper controller (2.4+) reassigns to the original replicas instead."""
        if not p.assignment.reassigning:
            return "NO_REASSIGNMENT_IN_PROGRESS"
        if not self.rules.reassignment_cancel:
            return "UNSUPPORTED_VERSION"   # KIP-455 (2.4): no cancellation before
        if self.rules.zk_controller:
            return self._reassign(p, p.assignment.original)
        new, isr, unclean = revert(p.assignment, p.isr)
        if unclean and not p.unclean:
            self.emit("reassignment", topic=p.topic, partition=p.partition, phase="rejected",
                      target=list(new.replicas), error="INVALID_REPLICA_ASSIGNMENT",
                      detail="reverting would require an unclean leader election")
            return "INVALID_REPLICA_ASSIGNMENT"
        self.emit("reassignment", topic=p.topic, partition=p.partition, phase="cancel",
                  target=list(new.replicas), replicas=list(new.replicas), adding=[],
                  removing=[], isr=list(isr), unclean=unclean)
        self._change(p, isr, "reassignment_revert_unclean" if unclean
                     else "cancel_reassignment", leader_gone=False, assignment=new)
        return NONE

    def _apply_assignment(self, p: PartitionRecord, new: Assignment, target_isr: tuple[int, ...],
                          reason: str) -> tuple[tuple[int, ...], bool, bool]:
        """The assignment half of ``PartitionChangeBuilder.build``: the target assignment,
        completed when its adding replicas are all in ``target_isr``
        (``completeReassignmentIfNeeded``). Returns the ISR to set and whether replicas
        left the list (which bumps the leader epoch: ``triggerLeaderEpochBumpIfNeeded``) and
        whether the reassignment completed."""
        old = p.assignment
        started = new   # what the move adds and removes (it may start and end at once)
        done = maybe_complete(new, target_isr,
                              all_targets=self.rules.reassignment_completes_on_targets)
        if done is not None:
            new, target_isr = done
        if new == old:
            return target_isr, False, False
        p.replicas, p.adding, p.removing = new.replicas, new.adding, new.removing
        self.emit("replicas_change", topic=p.topic, partition=p.partition,
                  old=list(old.replicas), new=list(new.replicas), adding=list(new.adding),
                  removing=list(new.removing),
                  reason="reassignment_complete" if done is not None else reason)
        if done is not None:
            self.emit("reassignment", topic=p.topic, partition=p.partition, phase="complete",
                      replicas=list(new.replicas), removed=list(started.removing),
                      added=list(started.adding), isr=list(target_isr))
        return target_isr, not set(old.replicas) <= set(new.replicas), done is not None

    # -- controlled shutdown -------------------------------------------------------------
    def _on_controlled_shutdown(self, m: ControlledShutdownRequest, src: Address) -> None:
        """``handleBrokerInControlledShutdown`` (KRaft) / ``doControlledShutdown`` (ZooKeeper
        eras): the broker is no longer an acceptable leader; every partition it leads gets
        another ISR member as leader and every ISR it is in loses it (not the last member
        without ELR, as for fencing); the answer says how many partitions it still leads.
        With none it may stop. KRaft fences it at once (SHUTDOWN_NOW); in the ZooKeeper eras
        its session ends when the process closes it, which the controller notices at its
        next session check (here: the session is expired now and its heartbeats no longer
        count), after the process is gone. Until then a ZooKeeper-era leader may put it back
        in an ISR (no eligibility check before KIP-841, 3.3); the fencing takes it out."""
        rec = self.store.brokers.get(m.broker)
        if rec is None or rec.epoch != m.broker_epoch or rec.fenced:
            self.send(src, ControlledShutdownResponse(m.broker, -1))
            return
        if not rec.shutting_down:
            rec.shutting_down = True
            self.emit("controlled_shutdown", broker=m.broker, broker_epoch=rec.epoch)
        for key in sorted(self.store.partitions):
            p = self.store.partitions[key]
            if m.broker not in p.isr and p.leader != m.broker:
                continue
            if self.rules.zk_controller and len(p.replicas) <= 1:
                # KafkaController.doControlledShutdown (2.8.0) acts only on partitions with
                # more than one assigned replica: a single-replica partition stays led by
                # the stopping broker until it is gone (it counts as remaining)
                continue
            new_isr = tuple(b for b in p.isr if b != m.broker)
            if not new_isr and not self.rules.elr:
                new_isr = p.isr
            self._change(p, new_isr, "controlled_shutdown", leader_gone=(p.leader == m.broker))
        remaining = sum(1 for p in self.store.partitions.values() if p.leader == m.broker)
        self.send(src, ControlledShutdownResponse(m.broker, remaining))
        if remaining == 0 and self.rules.zk_controller:
            self.last_heartbeat[m.broker] = self.now_ms - self.session_timeout_ms - 1
        elif remaining == 0:
            self._fence(m.broker, "controlled_shutdown")

    def _unregister(self, broker: int) -> None:
        """``ClusterControlManager.unregisterBroker``: a decommissioned broker's registration
        is removed (fenced first, so it leaves whatever ISR still names it)."""
        rec = self.store.brokers.get(broker)
        if rec is None:
            return
        if not rec.fenced:
            self._fence(broker, "unregistered")
        del self.store.brokers[broker]
        self.last_heartbeat.pop(broker, None)
        self.emit("broker_unregistered", broker=broker)
        self._broadcast_broker_states()

    # -- fencing -------------------------------------------------------------------------
    # The session check. ZooKeeper eras: the controller learns of an expired ZooKeeper
    # session at its next check, every min(500 ms, session / 4), and fences every expired
    # broker at once. KRaft (``Rules.stale_broker_check``): one broker per check, the one
    # heard from longest ago (``BrokerHeartbeatManager.findOneStaleBroker``, 3.7.0;
    # ``BrokerHeartbeatTracker.maybeRemoveExpired``, 4.1.0), the next checked at once
    # (3.7: the deadline re-armed to now) or 10 ms later (4.1: the periodic task's
    # immediate period); a session is expired once last contact + timeout < now.
    def _check_period_ms(self) -> float:
        if self._check_mode == "zookeeper":
            return min(500, self.session_timeout_ms / 4)
        # QuorumController.maybeFenceStaleBrokerPeriodNs: max(1 ms, session timeout / 8)
        return max(1, self.session_timeout_ms // 8)

    @property
    def armed_session_check(self) -> Tick:
        """The session check's timer message armed last (a test delivers it as its timer
        would; an older one is a no-op)."""
        return Tick("session_check", self._check_token, 0)

    def _arm_session_check(self, delay_ms: float) -> None:
        self._check_token += 1
        self.timer(delay_ms, Tick("session_check", self._check_token, 0))

    def _stale(self) -> list[int]:
        """Unfenced brokers whose session expired, the one heard from longest ago first."""
        now = self.now_ms
        last = self.last_heartbeat
        out = [(last.get(b, now), b) for b, rec in self.store.brokers.items()
               if not rec.fenced and now - last.get(b, now) > self.session_timeout_ms]
        return [b for _, b in sorted(out)]

    def _on_session_check(self) -> None:
        stale = self._stale()
        if self._check_mode == "zookeeper":
            for b in sorted(stale):
                self._fence_expired(b)
            self._arm_session_check(self._check_period_ms())
        elif self._check_mode == "periodic":
            if stale:
                self._fence_expired(stale[0])
            self._arm_session_check(10 if stale else self._check_period_ms())
        else:
            self._check_at = -1
            if stale:
                self._fence_expired(stale[0])
            self._rearm_session_deadline()

    def _rearm_session_deadline(self) -> None:
        """3.7.0 ``QuorumController.rescheduleMaybeFenceStaleBrokers``: the check armed for
        the moment the oldest unfenced broker's session expires (``nextCheckTimeNs``), or
        none when every broker is fenced. Other eras: nothing (their check is periodic)."""
        if self._check_mode != "deadline":
            return
        now = self.now_ms
        contacts = [self.last_heartbeat.get(b, now) for b, rec in self.store.brokers.items()
                    if not rec.fenced]
        # expired once strictly past the timeout: the first ms at which it is
        at = min(contacts) + self.session_timeout_ms + 1 if contacts else -1
        if at == self._check_at:
            return
        self._check_at = at
        if at < 0:
            self._check_token += 1   # nothing to check: an armed tick becomes a no-op
        else:
            self._arm_session_check(max(0, at - now))

    def _fence_expired(self, broker: int) -> None:
        rec = self.store.brokers[broker]
        self._fence(broker, "controlled_shutdown" if rec.shutting_down else "session_timeout")

    def _fence(self, broker: int, reason: str) -> None:
        """``handleBrokerFenced``: out of every ISR (not the last member without ELR)."""
        rec = self.store.brokers[broker]
        rec.fenced = True
        self.emit("broker_fenced", broker=broker, reason=reason)
        for key in sorted(self.store.partitions):
            p = self.store.partitions[key]
            if broker not in p.replicas:
                continue
            new_isr = tuple(b for b in p.isr if b != broker)
            if not new_isr and not self.rules.elr:
                new_isr = p.isr   # last replica standing: the ISR never becomes empty
            self._change(p, new_isr, "fenced", leader_gone=(p.leader == broker))
        self._broadcast_broker_states()

    def _handle_unclean_shutdown(self, broker: int) -> None:
        """KAFKA-15586: a broker back from an unclean shutdown leaves ISR and ELR
        (4.1.0 ``ReplicationControlManager.handleBrokerShutdown`` with ``isCleanShutdown``
        false: ``generateLeaderAndIsrUpdates`` with ``brokerWithUncleanShutdown``, over the
        partitions whose ISR, then whose ELR, holds it). In those changes the broker is not
        an acceptable leader; a partition left without one is elected again when the
        broker is unfenced (here: at the end of its registration), which is when its
        last-known leadership can make it leader. Its last-known-leader slot is left as it
        is (``maybeUpdateRecordElr`` keeps a one-member last-known ELR while there is no
        leader)."""
        self._unclean_restart = broker
        try:
            for key in sorted(self.store.partitions):
                p = self.store.partitions[key]
                if broker in p.elr or broker in p.isr:
                    new_isr = tuple(b for b in p.isr if b != broker)
                    self._change(p, new_isr, "unclean_shutdown",
                                 leader_gone=(p.leader == broker), unclean_shutdown=(broker,))
        finally:
            self._unclean_restart = -1

    # -- partition changes (PartitionChangeBuilder) --------------------------------------------
    def _change(self, p: PartitionRecord, target_isr: tuple[int, ...], reason: str, *,
                leader_gone: bool, unclean_shutdown: tuple[int, ...] = (),
                assignment: Assignment | None = None) -> None:
        if p.partition_epoch < 0:
            # not created yet (the topics of the scenario are created once every broker
            # has registered, ``_elect_initial``): nothing in the metadata to change. A
            # fencing or controlled shutdown before then had made it an offline partition
            # of epoch 0, which the creation then skipped: offline for good (found by a
            # swarm campaign with a controller quorum, seed 355: a controlled shutdown
            # before the third broker registered)
            return
        old_isr, old_elr, old_leader = p.isr, p.elr, p.leader
        old_assignment = p.assignment
        target_isr, removed, completed = self._apply_assignment(
            p, assignment if assignment is not None else old_assignment, target_isr, reason)
        if completed:
            reason = "reassignment_complete"
        reassigned = p.assignment != old_assignment
        if self.rules.elr:
            self._populate_elr(p, target_isr, unclean_shutdown)
        changed = target_isr != p.isr or old_elr != p.elr or reassigned
        p.isr = target_isr
        if changed:
            p.partition_epoch += 1
            if (reason in ("fenced", "controlled_shutdown") and not leader_gone
                    and old_isr != target_isr and self.rules.isr_removal_bumps_leader_epoch):
                # ZooKeeper eras: the controller writes the shrunken ISR of a partition
                # whose leader stays with the next leader epoch (2.0.0
                # ReplicaStateMachine.doRemoveReplicasFromIsr -> newLeaderAndIsr), for a
                # dead broker and for a stopping follower alike (doControlledShutdown puts
                # the partitions it follows through OfflineReplica)
                p.leader_epoch += 1
            elif reassigned and (removed or self.rules.zk_controller) and p.leader in p.isr:
                # a leader that stays: KRaft bumps its epoch when replicas leave the list
                # (triggerLeaderEpochBumpIfNeeded); the ZooKeeper controller whenever the
                # assignment changes (onPartitionReassignment A1 and B3,
                # updateLeaderEpochAndSendRequest; its further bump per removed replica in
                # B4 is folded into this one: docs/fidelity.md)
                p.leader_epoch += 1
            if old_isr != target_isr:
                self.emit("isr_change", topic=p.topic, partition=p.partition,
                          old=list(old_isr), new=list(target_isr), reason=reason,
                          leader_epoch=p.leader_epoch, partition_epoch=p.partition_epoch)
                if p.assignment.reassigning and not reassigned:
                    # a step of an ongoing reassignment: where AR, ISR and OSR stand now
                    self.emit("reassignment", topic=p.topic, partition=p.partition,
                              phase="progress", replicas=list(p.replicas),
                              adding=list(p.adding), removing=list(p.removing),
                              isr=list(target_isr))
        if leader_gone or (p.leader >= 0 and p.leader not in p.isr) or p.leader < 0:
            self._try_elect(p, reason)
        elif changed:
            self._publish(p)
        if self.rules.elr:
            self._update_last_known_leader(p, old_isr, old_leader)

    def _populate_elr(self, p: PartitionRecord, target_isr: tuple[int, ...],
                      unclean_shutdown: tuple[int, ...]) -> None:
        """``PartitionChangeBuilder.maybePopulateTargetElr`` (4.1.0, unchanged since
        3.7.0): under min ISR, the ELR is the old ISR and ELR less the target ISR and the
        broker back from an unclean shutdown; at or above min ISR it is empty. Kafka does
        not intersect it with the target replicas, so a replica a reassignment removes
        (and whose log it deletes) can stay in it; the ELR-IN-REPLICAS fix does
        (actors/eras.py FIXES; docs/findings/elr-keeps-removed-replica.md).

        The last-known ELR that method also computes is written only when
        ``useLastKnownLeaderInBalancedRecovery`` is off (``maybeUpdateRecordElr`` returns
        before writing it otherwise), and no Kafka code turns it off: the field holds the
        last leader instead (``_update_last_known_leader``)."""
        if len(target_isr) >= p.min_isr:
            p.elr = ()
            return
        candidates = (set(p.elr) | set(p.isr)) - set(target_isr) - set(unclean_shutdown)
        if self.rules.elr_within_replicas:
            # the ELR-IN-REPLICAS fix: a replica a reassignment removed (whose log is
            # deleted) is never eligible; Kafka keeps it
            candidates &= set(p.replicas)
        p.elr = tuple(sorted(candidates))

    def _update_last_known_leader(self, p: PartitionRecord, old_isr: tuple[int, ...],
                                  old_leader: int) -> None:
        """``PartitionChangeBuilder.maybeUpdateLastKnownLeader`` (4.1.0, the mode every
        Kafka controller runs in): a change that empties the ISR records the leader before
        it as the last-known ELR (unless it already is); a partition that has a leader
        after the change has none. The election of a last-known leader reads the field as
        it was before the change (``canElectLastKnownLeader``)."""
        if old_isr and not p.isr:
            if p.last_known_elr != (old_leader,):
                p.last_known_elr = (old_leader,)
        elif p.leader >= 0:
            p.last_known_elr = ()

    def _try_elect(self, p: PartitionRecord, reason: str) -> None:
        """``electAnyLeader`` (``actors.election``): ISR, then ELR (ISR empty), then the last
        known leader, then unclean if allowed; then the step's side effects."""
        e = elect_leader(p.replicas, p.isr, p.elr if self.rules.elr else (), p.last_known_elr,
                         p.leader, self._acceptable, unclean_allowed=p.unclean,
                         elr_enabled=self.rules.elr)
        if e.kind == "keep":
            self._publish(p)
            return
        if e.kind == "clean":
            self._new_leader(p, e.leader, "clean")
            return
        if e.kind == "elr":
            p.elr = tuple(x for x in p.elr if x != e.leader)
            self._elect_alone(p, e.leader, "elr_election", "elr")
            return
        if e.kind == "last_known_leader":
            # KIP-966 last-known-leader: the one replica last known eligible (unclean)
            p.last_known_elr = ()
            p.recovering = True
            self._elect_alone(p, e.leader, "last_known_leader", "unclean")
            return
        if e.kind == "unclean":
            # "we have to forcibly set the ISR to just the new leader" (KIP-704)
            p.elr = ()
            p.recovering = True
            self._elect_alone(p, e.leader, "unclean_election", "unclean")
            return
        if p.leader >= 0 or reason != "broker_registered":
            was = p.leader
            p.leader = -1
            p.partition_epoch += 1
            if was >= 0:
                p.leader_epoch += 1
            self.emit("partition_offline", topic=p.topic, partition=p.partition,
                      leader_epoch=p.leader_epoch, isr=list(p.isr), elr=list(p.elr))
            self._publish(p)

    def _elect_alone(self, p: PartitionRecord, leader: int, reason: str, election: str
                     ) -> None:
        """Elect ``leader`` with the ISR set to just itself (ELR, last-known, unclean)."""
        old = p.isr
        p.isr = (leader,)
        self.emit("isr_change", topic=p.topic, partition=p.partition, old=list(old),
                  new=[leader], reason=reason, leader_epoch=p.leader_epoch + 1,
                  partition_epoch=p.partition_epoch + 1)
        self._new_leader(p, leader, election)

    def _new_leader(self, p: PartitionRecord, leader: int, election: str) -> None:
        p.leader = leader
        if self.rules.elr:
            p.last_known_elr = ()   # maybeUpdateLastKnownLeader: it has a leader now
        p.leader_epoch += 1
        p.partition_epoch += 1
        if election != "unclean":
            p.recovering = False
        self._elected(p, election)

    def _elected(self, p: PartitionRecord, election: str) -> None:
        self.emit("leader_elected", topic=p.topic, partition=p.partition, leader=p.leader,
                  leader_epoch=p.leader_epoch, isr=list(p.isr), election=election,
                  partition_epoch=p.partition_epoch, elr=list(p.elr))
        self._publish(p)

    def _publish(self, p: PartitionRecord) -> None:
        self.emit("partition_state", topic=p.topic, partition=p.partition,
                  path=f"/brokers/topics/{p.topic}/partitions/{p.partition}/state",
                  state={"controller_epoch": self.store.controller_epoch, "leader": p.leader,
                         "version": 1, "leader_epoch": p.leader_epoch, "isr": list(p.isr)},
                  elr=list(p.elr), partition_epoch=p.partition_epoch)
        self._broadcast(p)

    # -- AlterPartition ----------------------------------------------------------------------
    def _on_alter_partition(self, m: AlterPartition, src: Address) -> None:
        p = self.store.partitions.get((m.topic, m.partition))
        if p is None:
            return
        err = NONE
        leader_rec = self.store.brokers.get(m.leader)
        if p.leader != m.leader:
            err = NOT_LEADER_OR_FOLLOWER
        elif m.leader_epoch != p.leader_epoch:
            err = FENCED_LEADER_EPOCH
        elif m.partition_epoch != p.partition_epoch:
            err = INVALID_UPDATE_VERSION
        elif (self.rules.broker_epoch_check and leader_rec is not None
              and m.broker_epoch not in (-1, leader_rec.epoch)):
            err = STALE_BROKER_EPOCH
        else:
            for b, epoch in m.new_isr:
                if b == m.leader or b in p.isr:
                    continue
                rec = self.store.brokers.get(b)
                if self.rules.isr_eligibility and (rec is None or rec.fenced
                                                   or rec.shutting_down):
                    err = INELIGIBLE_REPLICA    # KIP-841 (3.3+): fenced or shutting down
                elif (self.rules.broker_epoch_check and rec is not None
                      and epoch not in (-1, rec.epoch)):
                    err = INELIGIBLE_REPLICA    # KIP-903: a stale incarnation's fetch
        if err != NONE:
            self.emit("alter_partition_rejected", topic=m.topic, partition=m.partition,
                      leader=m.leader, error=err, proposed_isr=[b for b, _ in m.new_isr])
            self.send(src, AlterPartitionResponse(m.topic, m.partition, err, p.isr,
                                                  p.leader_epoch, p.partition_epoch))
            return
        new_isr = tuple(b for b, _ in m.new_isr)
        shrink = len(new_isr) < len(p.isr)
        self._change(p, new_isr, "shrink" if shrink else "expand", leader_gone=False)
        if p.isr == new_isr and p.partition_epoch == m.partition_epoch:
            p.partition_epoch += 1   # same ISR re-proposed: still a new version
            self._publish(p)
        self.send(src, AlterPartitionResponse(m.topic, m.partition, NONE, p.isr,
                                              p.leader_epoch, p.partition_epoch))
