"""The metadata records the active controller writes (issue 52, point 2; KIP-631).

The controller's decisions change a working copy of the committed image, and
``records_between`` writes what changed in Kafka's record vocabulary (3.7.0
``metadata/src/main/resources/common/metadata/*.json``): ``RegisterBrokerRecord`` for a
registration, ``BrokerRegistrationChangeRecord`` for fencing, unfencing and controlled
shutdown (``ClusterControlManager``), ``TopicRecord`` then ``PartitionRecord`` for a new
topic's partitions, ``PartitionChangeRecord`` with only the changed fields for every later
change (``PartitionChangeBuilder.build``). Replaying the records, after a trip through the
wire codec, rebuilds the same image on every controller and observer.
"""

from __future__ import annotations

import copy

import msgpack

from actors.controller import BrokerRecord, ControllerStore, PartitionRecord
from actors.quorum_controller import _snapshot, apply_record, records_between


def _image() -> ControllerStore:
    st = ControllerStore()
    st.brokers = {1: BrokerRecord(4, 1, False), 2: BrokerRecord(5, 1, False)}
    st.partitions = {("orders", 0): PartitionRecord(
        "orders", 0, (1, 2, 3), 2, False, leader=1, leader_epoch=3, isr=(1, 2, 3),
        partition_epoch=7)}
    return st


def _replayed(before: ControllerStore, records: list[tuple[object, ...]]) -> ControllerStore:
    image = copy.deepcopy(before)
    for rec in msgpack.unpackb(msgpack.packb(records)):   # lists where tuples were
        apply_record(image, rec)
    return image


def test_an_isr_shrink_writes_a_partition_change_record_with_only_the_changed_fields() -> None:
    before = _image()
    after = copy.deepcopy(before)
    p = after.partitions[("orders", 0)]
    p.isr, p.partition_epoch = (1, 2), 8
    records = records_between(_snapshot(before), after)
    assert records == [("PartitionChangeRecord", "orders", 0,
                        (("isr", (1, 2)), ("partition_epoch", 8)))]
    assert _replayed(before, records) == after


def test_a_leader_change_carries_the_leader_and_its_epochs() -> None:
    before = _image()
    after = copy.deepcopy(before)
    p = after.partitions[("orders", 0)]
    p.leader, p.leader_epoch, p.isr, p.partition_epoch = 2, 4, (2, 3), 8
    (rec,) = records_between(_snapshot(before), after)
    assert rec[0] == "PartitionChangeRecord"
    assert [name for name, _ in rec[3]] == ["leader", "leader_epoch", "isr", "partition_epoch"]
    assert _replayed(before, [rec]) == after


def test_fencing_is_a_registration_change_and_a_restart_a_new_registration() -> None:
    before = _image()
    after = copy.deepcopy(before)
    after.brokers[1].fenced = True                  # fenced: the same registration
    after.brokers[2] = BrokerRecord(9, 2, False)    # a new incarnation: a new broker epoch
    after.brokers[3] = BrokerRecord(10, 1, False)   # a new broker
    records = records_between(_snapshot(before), after)
    assert records == [("BrokerRegistrationChangeRecord", 1, 4, True, False),
                       ("RegisterBrokerRecord", 2, 9, 2, False, False),
                       ("RegisterBrokerRecord", 3, 10, 1, False, False)]
    assert _replayed(before, records) == after


def test_a_new_topic_writes_its_topic_record_before_its_partition_records() -> None:
    before = _image()
    after = copy.deepcopy(before)
    for i in range(2):
        after.partitions[("payments", i)] = PartitionRecord(
            "payments", i, (2, 3), 1, False, leader=2, leader_epoch=0, isr=(2, 3),
            partition_epoch=0)
    after.partitions[("orders", 1)] = PartitionRecord(
        "orders", 1, (3, 1, 2), 2, False, leader=3, leader_epoch=0, isr=(3, 1, 2),
        partition_epoch=0)
    records = records_between(_snapshot(before), after)
    # a partition added to a topic the image has needs no topic record
    assert [r[0] if r[0] == "TopicRecord" else r[:3] for r in records] == [
        ("PartitionRecord", "orders", 1), "TopicRecord", ("PartitionRecord", "payments", 0),
        ("PartitionRecord", "payments", 1)]
    assert _replayed(before, records) == after


def test_an_unchanged_image_writes_nothing_and_an_unregistration_its_record() -> None:
    before = _image()
    assert records_between(_snapshot(before), copy.deepcopy(before)) == []
    after = copy.deepcopy(before)
    del after.brokers[2]
    records = records_between(_snapshot(before), after)
    assert records == [("UnregisterBrokerRecord", 2)]
    assert _replayed(before, records) == after
